"""`--json`: one event per line on stdout, nothing else; warnings go to stderr as well as
into the stream. The event processor of a run with `--json`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from oiexec.core.context import ItemEmitter
from oiexec.core.costs import Spend
from oiexec.core.events import ErrorItem, ThreadEvent, to_json_line
from oiexec.core.redact import redact


class Lines(Protocol):
    """Where the processor writes: stdout and stderr, or the Python API's pipe."""

    def write(self, text: str, /) -> int: ...

    def flush(self) -> None: ...


class JsonlProcessor:
    def __init__(self, stream: Lines, log: Lines) -> None:
        self._stream = stream
        self._log = log

    def header(self, title: str, fields: Sequence[tuple[str, str]]) -> None:
        pass  # the settings are not events; `thread.started` opens the stream

    def warning(self, text: str) -> None:
        self._log.write(redact(f"warning: {text}") + "\n")
        self._log.flush()

    def startup_warning(self, text: str, items: ItemEmitter) -> None:
        # As Codex does: also an `error` item before `turn.started`, so SDK users see it.
        self.warning(text)
        items.completed(ErrorItem(id=items.next_id(), message=text))

    def step(self, number: int) -> None:
        pass

    def final_output(self, message: str) -> None:
        pass  # the answer already went out as the last `agent_message` item

    def spent(self, spend: Spend) -> None:
        pass  # `turn.completed` carries the cost; stdout holds events only

    def emit(self, event: ThreadEvent) -> None:
        # Flushed per line: the SDK and `jq` consumers read the stream as it happens.
        self._stream.write(redact(to_json_line(event)) + "\n")
        self._stream.flush()

    def close(self) -> None:
        self._stream.flush()
