"""The run's side of what the Python API reads: its output as messages of the one child
protocol (`oiexec/runner/child_protocol.py`: `RunMessage`, JSON lines over a pipe).

The child shows its run through the CLI's own `JsonlProcessor` writing into `ChannelText`
streams, so each event goes over as the redacted JSONL line `interpreter exec --json` prints
and the caller parses the same contract; what the run prints otherwise becomes warnings.
"""

from __future__ import annotations

import io
from typing import Literal

from oiexec.core.redact import redact
from oiexec.output.jsonl import JsonlProcessor
from oiexec.runner.child_protocol import Channel, EventMessage, WarningMessage

__all__ = ["Channel", "ChannelText", "pipe_processor"]


def pipe_processor(channel: Channel) -> JsonlProcessor:
    """The run as the caller sees it: events and warnings over the channel, nothing printed
    (`--json`'s processor, its stdout and stderr being the channel)."""
    return JsonlProcessor(ChannelText(channel, "event"), ChannelText(channel))


class ChannelText(io.TextIOBase):
    """A text stream whose whole lines become messages of kind `kind` for the caller, never
    the terminal. As `warning` (the default) it is the child's stdout and stderr (the runner
    writes a few notes there directly, e.g. before a startup error) and the JSONL processor's
    log; as `event` it is that processor's stream, one JSONL event per line."""

    def __init__(self, channel: Channel, kind: Literal["event", "warning"] = "warning") -> None:
        super().__init__()
        self._channel = channel
        self._kind = kind
        self._pending = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            self._send(line)
        return len(text)

    def flush(self) -> None:
        if self._pending:
            line, self._pending = self._pending, ""
            self._send(line)

    def _send(self, line: str) -> None:
        line = line.rstrip()
        if not line:
            return
        text = redact(line.removeprefix("warning: "))
        if self._kind == "event":
            self._channel.send(EventMessage(op="event", line=text))
        else:
            self._channel.send(WarningMessage(op="warning", text=text))
