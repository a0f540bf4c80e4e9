"""The pipe between a run's child process and the Python API that started it.

The child shows its run through the CLI's own `JsonlProcessor` writing into `ChannelText`
streams, so each event goes over as the redacted JSONL line `interpreter exec --json` prints
and the caller parses the same contract. Messages are small tuples of strings and numbers,
tagged by their first element, each written as one JSON line (`wire.py`; never pickled: the
caller reads them as data):

    ("event", line)                      one JSONL event
    ("warning", text)                    a warning (the CLI's `warning:` lines on stderr)
    ("done", payload)                    the run finished: its outcome as redacted JSON
    ("error", class_names, message, hint) an OiexecError before the thread started
    ("interrupted", message, exit_code)  interrupted before the thread started
    ("crash", text)                      a bug in the child, with its traceback
"""

from __future__ import annotations

import contextlib
import io
import os
import queue
import threading
from typing import Any

from oiexec.api.wire import encode_message
from oiexec.core.redact import redact
from oiexec.output.jsonl import JsonlProcessor

__all__ = ["Channel", "ChannelText", "pipe_processor"]


class Channel:
    """The child's end. Messages are written by a thread of their own, in order: the runner's
    SIGTERM and SIGALRM handlers raise in the main thread wherever it is, and an exception
    between the two writes of a large message would leave the caller a torn frame. The main
    thread only puts messages on a queue (`SimpleQueue.put` is atomic and reentrant)."""

    def __init__(self, fd: int) -> None:
        #: The write end of the pipe; the caller reads the other.
        self._fd = fd
        self._queue: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()
        self._writer = threading.Thread(target=self._write, name="oiexec-api-channel", daemon=True)
        self._writer.start()

    def send(self, *message: Any) -> None:
        self._queue.put(message)

    def close(self) -> None:
        """Writes what is queued, then closes the pipe (the caller's end of file)."""
        self._queue.put(None)
        self._writer.join()
        with contextlib.suppress(OSError):
            os.close(self._fd)

    def _write(self) -> None:
        while (message := self._queue.get()) is not None:
            data = memoryview(encode_message(message))
            # The caller may have gone away; the run still finishes and writes its session.
            with contextlib.suppress(OSError):
                while data:
                    data = data[os.write(self._fd, data) :]


def pipe_processor(channel: Channel) -> JsonlProcessor:
    """The run as the caller sees it: events and warnings over the channel, nothing printed
    (`--json`'s processor, its stdout and stderr being the channel)."""
    return JsonlProcessor(ChannelText(channel, "event"), ChannelText(channel))


class ChannelText(io.TextIOBase):
    """A text stream whose whole lines become messages tagged `tag` for the caller, never the
    terminal. As `warning` (the default) it is the child's stdout and stderr (the runner writes
    a few notes there directly, e.g. before a startup error) and the JSONL processor's log; as
    `event` it is that processor's stream, one JSONL event per line."""

    def __init__(self, channel: Channel, tag: str = "warning") -> None:
        super().__init__()
        self._channel = channel
        self._tag = tag
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
        if line:
            self._channel.send(self._tag, redact(line.removeprefix("warning: ")))
