"""The pipe between a run's child process and the Python API that started it.

The child shows its run through `PipeProcessor` (the runner's `EventProcessor` seam) and
sends each event as its redacted JSONL line, exactly what `interpreter exec --json` prints,
so the caller parses the same contract. Messages are small tuples, tagged by their first
element:

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
import queue
import threading
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any

from oiexec.core.context import ItemEmitter
from oiexec.core.events import ErrorItem, ThreadEvent, to_json_line
from oiexec.core.redact import redact

__all__ = ["Channel", "ChannelText", "PipeProcessor"]


class Channel:
    """The child's end. Messages are written by a thread of their own, in order: the runner's
    SIGTERM and SIGALRM handlers raise in the main thread wherever it is, and an exception
    between the two writes of a large message would leave the caller a torn frame. The main
    thread only puts messages on a queue (`SimpleQueue.put` is atomic and reentrant)."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._queue: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()
        self._writer = threading.Thread(target=self._write, name="oiexec-api-channel", daemon=True)
        self._writer.start()

    def send(self, *message: Any) -> None:
        self._queue.put(message)

    def close(self) -> None:
        """Writes what is queued, then closes the pipe (the caller's end of file)."""
        self._queue.put(None)
        self._writer.join()
        self._conn.close()

    def _write(self) -> None:
        while (message := self._queue.get()) is not None:
            # The caller may have gone away; the run still finishes and writes its session.
            with contextlib.suppress(OSError):
                self._conn.send(message)


class PipeProcessor:
    """The run as the caller sees it: events and warnings over the channel, nothing printed."""

    def __init__(self, channel: Channel) -> None:
        self._channel = channel

    def header(self, title: str, fields: Sequence[tuple[str, str]]) -> None:
        pass  # the settings are not events; `thread.started` opens the stream

    def warning(self, text: str) -> None:
        self._channel.send("warning", redact(text))

    def startup_warning(self, text: str, items: ItemEmitter) -> None:
        # As with --json: also an `error` item before `turn.started`.
        self.warning(text)
        items.completed(ErrorItem(id=items.next_id(), message=text))

    def step(self, number: int) -> None:
        pass

    def final_output(self, message: str) -> None:
        pass  # the answer already went out as the last `agent_message` item

    def emit(self, event: ThreadEvent) -> None:
        self._channel.send("event", redact(to_json_line(event)))

    def close(self) -> None:
        pass


class ChannelText(io.TextIOBase):
    """The child's stdout and stderr: whole lines become warnings for the caller (the runner
    writes a few notes there directly, e.g. before a startup error), never the terminal."""

    def __init__(self, channel: Channel) -> None:
        super().__init__()
        self._channel = channel
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
            self._channel.send("warning", redact(line.removeprefix("warning: ")))
