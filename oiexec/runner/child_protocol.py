"""The one protocol between oiexec and the processes it starts for its own runs.

A run (a batch task, a Python API turn, an `mcp-server` tool call, which is an API turn) is a
fork of the preloaded zygote (`zygote.py`), asked for by the caller (`launch.py`). Every
message between them, either way, is one JSON object on one line (JSON escapes newlines, so a
line is a message), its kind named by `op`; never pickle: each side reads the other's
messages as data, checked against the models below before it acts on them.

Two channels carry it, both inherited, neither reachable by any other process:

- caller <-> zygote: one end of a socketpair. Requests (`SpawnRequest`) carry descriptors as
  SCM_RIGHTS, sent with the line's first byte; the line says how many (`fds`), and the
  reader reads line by line, so a message's descriptors are always its own (`SocketReader`).
  Replies: `Started`, `Refused`, `Exited`.
- run -> caller: a pipe whose write end the run holds (`Channel`): `RunMessage`, what the
  Python API reads of a turn. A batch task reports through the CLI's own outputs (its JSONL
  on stdout, its JUnit report) and its exit status, which comes back as `Exited`.
"""

from __future__ import annotations

import array
import contextlib
import functools
import json
import os
import queue
import socket
import threading
import types
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypedDict, Union, get_args, get_origin, get_type_hints

__all__ = [
    "MAX_FDS",
    "MAX_LINE",
    "TARGETS",
    "ApiRunArgs",
    "BatchTaskArgs",
    "Channel",
    "CrashMessage",
    "DoneMessage",
    "ErrorMessage",
    "EventMessage",
    "Exited",
    "InterruptedMessage",
    "LineReader",
    "ProtocolError",
    "Refused",
    "RunMessage",
    "SocketReader",
    "SpawnRequest",
    "Started",
    "WarningMessage",
    "checked",
    "close_fds",
    "encode",
    "send",
]

# -- the vocabulary ---------------------------------------------------------------------------

#: The only things a run's process can be made to run, by name: `module:function(args, fds)
#: -> exit code`. Named, not imported (the API's module is a layer above this one).
TARGETS = {
    "batch-task": "oiexec.runner.batch.launcher:task_main",
    "api-run": "oiexec.api.child:run_main",
}


class SpawnRequest(TypedDict):
    """caller -> zygote: fork a run of `target`; its descriptors (the target's, then the
    run's life pipe) come with the line."""

    op: Literal["spawn"]
    id: int
    target: str
    args: dict[str, Any]
    env: dict[str, str]
    cwd: str
    fds: int


class Started(TypedDict):
    """zygote -> caller: request `id` is running as process `pid`."""

    op: Literal["started"]
    id: int
    pid: int


class Refused(TypedDict):
    """zygote -> caller: request `id` (None: unreadable) was not started, and why."""

    op: Literal["refused"]
    id: int | None
    error: str


class Exited(TypedDict):
    """zygote -> caller: run `pid` ended with `status` (negative: killed by that signal)."""

    op: Literal["exit"]
    pid: int
    status: int


ZygoteReply = Union[Started, Refused, Exited]  # noqa: UP007 - a runtime value, read below


class BatchTaskArgs(TypedDict):
    """The `batch-task` target's args: `interpreter ARGV...`; fds: stdin, stdout, stderr."""

    argv: list[str]


class ApiRunArgs(TypedDict):
    """The `api-run` target's args: the job (`oiexec/api/wire.py`); fd: the message pipe."""

    job: Any


class EventMessage(TypedDict):
    """One JSONL event, the redacted line `interpreter exec --json` prints."""

    op: Literal["event"]
    line: str


class WarningMessage(TypedDict):
    """A warning (the CLI's `warning:` lines on stderr)."""

    op: Literal["warning"]
    text: str


class DoneMessage(TypedDict):
    """The run finished: its outcome, as JSON text redacted as a whole."""

    op: Literal["done"]
    result: str


class ErrorMessage(TypedDict):
    """An OiexecError before the thread started; `classes`: its class names up the tree."""

    op: Literal["error"]
    classes: list[str]
    message: str
    hint: str | None


class InterruptedMessage(TypedDict):
    """Interrupted before the thread started."""

    op: Literal["interrupted"]
    message: str
    exit_code: int


class CrashMessage(TypedDict):
    """A bug in the run's process (or a line that was no message), with its traceback."""

    op: Literal["crash"]
    text: str


RunMessage = Union[  # noqa: UP007 - a runtime value, read below
    EventMessage, WarningMessage, DoneMessage, ErrorMessage, InterruptedMessage, CrashMessage
]


class ProtocolError(Exception):
    """A line that is not a message of the vocabulary (the stream is still in step)."""


def checked(message: Mapping[str, Any], union: Any) -> Any:
    """`message` as the member of `union` (a Union of the models above) its `op` names;
    `ProtocolError` when it has no such `op` or a field of the wrong type."""
    op = message.get("op")
    for model in get_args(union):
        hints = _hints(model)
        if op not in get_args(hints["op"]):
            continue
        for name, hint in hints.items():
            if name not in message or not _fits(message[name], hint):
                raise ProtocolError(f"{op!r} message: {name!r} missing or not {hint}")
        return message
    raise ProtocolError(f"unknown message {op!r}")


@functools.cache
def _hints(model: type) -> dict[str, Any]:
    return get_type_hints(model)


def _fits(value: Any, hint: Any) -> bool:
    origin = get_origin(hint)
    if hint is Any:
        return True
    if origin is Literal:
        return value in get_args(hint)
    if origin is Union or origin is types.UnionType:
        return any(_fits(value, member) for member in get_args(hint))
    if origin is list:
        return isinstance(value, list) and all(_fits(v, get_args(hint)[0]) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(
            isinstance(k, str) and _fits(v, get_args(hint)[1]) for k, v in value.items()
        )
    if hint is type(None):
        return value is None
    if hint is int:
        return type(value) is int  # not a bool
    return isinstance(value, hint)


# -- framing: JSON lines ----------------------------------------------------------------------

#: A line longer than this is refused (and skipped): an API turn's job and result fit.
MAX_LINE = 64 << 20
#: A request's descriptors at most: the target's few, plus the life pipe.
MAX_FDS = 8
#: What one read of a channel asks for.
_CHUNK = 1 << 16


def encode(message: Mapping[str, Any]) -> bytes:
    """One message as its line."""
    return json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n"


class LineReader:
    """Splits what is read from a stream into messages (JSON objects with a string `op`);
    a line that is not one becomes a `ProtocolError` in its place."""

    def __init__(self, max_line: int = MAX_LINE) -> None:
        self._parts: list[bytes] = []
        self._size = 0
        self._max = max_line
        #: Inside a line already too long: its bytes are dropped up to its end.
        self._skipping = False

    def feed(self, data: bytes) -> list[dict[str, Any] | ProtocolError]:
        # Only the new bytes are searched, and a long line joined once: a large result read
        # in 64 KiB pieces costs its length, not its length squared.
        found: list[dict[str, Any] | ProtocolError] = []
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            self._parts.append(data[start:end])
            line = b"".join(self._parts)
            self._parts, self._size = [], 0
            start = end + 1
            if self._skipping:
                self._skipping = False
                found.append(ProtocolError(f"a line longer than {self._max} bytes"))
            elif line.strip():
                found.append(_parse(line))
        rest = data[start:]
        if rest and not self._skipping:
            self._parts.append(rest)
            self._size += len(rest)
            if self._size > self._max:
                self._parts, self._size, self._skipping = [], 0, True
        # What is left at the end of file is a line torn by a process killed mid-write:
        # dropped, as the missing result says what happened.
        return found


def _parse(line: bytes) -> dict[str, Any] | ProtocolError:
    try:
        message = json.loads(line)
    except ValueError as exc:
        return ProtocolError(f"not JSON ({exc}): {line[:200]!r}")
    if not isinstance(message, dict) or not isinstance(message.get("op"), str):
        return ProtocolError(f"not a message: {line[:200]!r}")
    return message


# -- the socketpair: lines with descriptors ---------------------------------------------------


def send(sock: socket.socket, message: Mapping[str, Any], fds: Sequence[int] = ()) -> None:
    """One line on the socket; `fds` ride with its first byte, their number in `fds`."""
    data = encode({**message, "fds": len(fds)} if fds else message)
    if fds:
        ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())]
        # A stream socket may take part of a large line (a signal mid-send); the rest
        # follows without the descriptors, which went with the first byte.
        sent = sock.sendmsg([data], ancillary)
        sock.sendall(data[sent:])
    else:
        sock.sendall(data)


class SocketReader:
    """The receiving side of `send`: messages, each with the descriptors that came with it
    (close-on-exec).

    A line is read from its first byte to its newline and never past it (the end is found
    by peeking first), so the descriptors one read returns are those of the line that read
    began: the kernel hands a line's descriptors to the read that takes its first byte, and
    never to a read that began before it. A line's descriptors are always its own, whatever
    the lines before it said."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._lines = LineReader()
        #: The descriptors of the line being read, and whether the kernel dropped some.
        self._fds: list[int] = []
        self._truncated = False
        self._at_line_start = True

    def receive(self) -> list[tuple[dict[str, Any] | ProtocolError, list[int]]] | None:
        """What one read of the socket completes (a message, or nothing yet); None at its
        end. Blocks only if nothing is there to read."""
        ahead = self._sock.recv(_CHUNK, socket.MSG_PEEK)
        end = ahead.find(b"\n")
        size = len(ahead) if end < 0 else end + 1
        flags = getattr(socket, "MSG_CMSG_CLOEXEC", 0)
        space = socket.CMSG_SPACE(MAX_FDS * array.array("i").itemsize)
        data, ancillary, msg_flags, _ = self._sock.recvmsg(max(size, 1), space, flags)
        if not data:
            self.close()
            return None
        fds = _fds_of(ancillary)
        if self._at_line_start:
            self._fds, self._truncated = fds, bool(msg_flags & socket.MSG_CTRUNC)
        elif fds:  # not from `send`: the line they came in is refused
            self._fds.extend(fds)
            self._truncated = True
        self._at_line_start = data.endswith(b"\n")
        found = self._lines.feed(data)
        if not self._at_line_start:
            return []
        fds, self._fds = self._fds, []
        if not found:  # a blank line: nothing to hand its descriptors to
            close_fds(fds)
            return []
        (message,) = found
        problem = message if isinstance(message, ProtocolError) else self._fds_problem(message, fds)
        if problem is not None:
            close_fds(fds)
            return [(problem, [])]
        return [(message, fds)]

    def close(self) -> None:
        """Closes the descriptors received and not handed out."""
        close_fds(self._fds)
        self._fds = []

    def _fds_problem(self, message: dict[str, Any], fds: list[int]) -> ProtocolError | None:
        if self._truncated:
            return ProtocolError(f"more than {MAX_FDS} descriptors")
        count = message.get("fds", 0)
        if count != len(fds) or type(count) is not int:
            return ProtocolError(f"fds: {count!r} said, {len(fds)} received")
        return None


def _fds_of(ancillary: list[tuple[int, int, bytes]]) -> list[int]:
    fds: list[int] = []
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            numbers = array.array("i")
            numbers.frombytes(data[: len(data) - len(data) % numbers.itemsize])
            fds.extend(numbers)
    for fd in fds:
        # Where MSG_CMSG_CLOEXEC is missing: nothing received may leak into a run's commands.
        os.set_inheritable(fd, False)
    return fds


def close_fds(fds: Sequence[int]) -> None:
    """Closes each of `fds` (descriptors a message brought, or the sender's copies of them
    once sent), whichever are still open."""
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


# -- the run's pipe ---------------------------------------------------------------------------


class Channel:
    """The run's end of its message pipe. Messages are written by a thread of their own, in
    order: the runner's SIGTERM and SIGALRM handlers raise in the main thread wherever it is,
    and an exception between the two writes of a large message would leave the caller a
    torn line. The main thread only puts messages on a queue (`SimpleQueue.put` is atomic
    and reentrant)."""

    def __init__(self, fd: int) -> None:
        #: The write end of the pipe; the caller reads the other.
        self._fd = fd
        self._queue: queue.SimpleQueue[RunMessage | None] = queue.SimpleQueue()
        self._writer = threading.Thread(target=self._write, name="oiexec-channel", daemon=True)
        self._writer.start()

    def send(self, message: RunMessage) -> None:
        self._queue.put(message)

    def close(self) -> None:
        """Writes what is queued, then closes the pipe (the caller's end of file)."""
        self._queue.put(None)
        self._writer.join()
        with contextlib.suppress(OSError):
            os.close(self._fd)

    def _write(self) -> None:
        while (message := self._queue.get()) is not None:
            data = memoryview(encode(message))
            # The caller may have gone away; the run still finishes and writes its session.
            with contextlib.suppress(OSError):
                while data:
                    data = data[os.write(self._fd, data) :]
