"""`--json`: one event per line on stdout, nothing else."""

from __future__ import annotations

from typing import TextIO

from oiexec.core.events import ThreadEvent, to_json_line
from oiexec.core.redact import redact


class JsonlSink:
    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def emit(self, event: ThreadEvent) -> None:
        # Flushed per line: the SDK and `jq` consumers read the stream as it happens.
        self._stream.write(redact(to_json_line(event)) + "\n")
        self._stream.flush()

    def close(self) -> None:
        self._stream.flush()
