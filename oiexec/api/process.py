"""The caller's side of a run's child process: start it, read its messages (blocking or on
the event loop), cancel it.

Each run is a fork of the preloaded zygote (runner/zygote.py, reached only through a
socketpair), in its own process group; its messages come back as JSON lines over a pipe, the
child protocol's `RunMessage`s (runner/child_protocol.py). Cancelling sends SIGTERM to that
group, which the runner handles as the CLI does (the turn ends, every command the model
started is killed, the session is written); a run still alive after `CANCEL_GRACE_S` gets
SIGKILL. A zygote that dies under a run stops it, and closing the run then raises
`LaunchError` saying so.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import AsyncIterator, Iterator, Mapping

from oiexec.api.child import ExecJob, ReviewJob
from oiexec.api.wire import encode_job
from oiexec.runner.child_protocol import (
    ApiRunArgs,
    CrashMessage,
    LineReader,
    ProtocolError,
    RunMessage,
    checked,
)
from oiexec.runner.launch import LaunchError, spawn

__all__ = ["CANCEL_GRACE_S", "RunProcess"]

#: How long a cancelled run may take to end cleanly before it is killed.
CANCEL_GRACE_S = 10.0

_CHUNK = 1 << 16


class RunProcess:
    """One started run. Not thread-safe except `cancel`, which any thread may call."""

    def __init__(self, job: ExecJob | ReviewJob, env: Mapping[str, str], cwd: str) -> None:
        encoded = encode_job(job)
        reader, writer = os.pipe()
        try:
            args = ApiRunArgs(job=encoded)
            self._child = spawn("api-run", args, env=env, cwd=cwd, fds=[writer])
        except BaseException:
            os.close(reader)
            raise
        finally:
            os.close(writer)  # the child holds the only writer: its exit is our end of file
        self._fd = reader
        self._lines = LineReader()
        self.pid: int = self._child.pid
        self._exitcode: int | None = None

    # -- reading ----------------------------------------------------------------------------

    def messages(self) -> Iterator[RunMessage]:
        """The child's messages until it closes the pipe (blocking)."""
        while data := self._read():
            yield from self._messages(data)

    async def amessages(self) -> AsyncIterator[RunMessage]:
        """The same, read when the pipe is readable: the event loop is never blocked."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[RunMessage | None] = asyncio.Queue()
        fd = self._fd
        os.set_blocking(fd, False)

        def readable() -> None:
            try:
                data = os.read(fd, _CHUNK)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                loop.remove_reader(fd)
                queue.put_nowait(None)
                return
            for message in self._messages(data):
                queue.put_nowait(message)

        loop.add_reader(fd, readable)
        try:
            while (message := await queue.get()) is not None:
                yield message
        finally:
            loop.remove_reader(fd)

    def _messages(self, data: bytes) -> list[RunMessage]:
        """The messages `data` completes. The child's lines are parsed as data: one that is
        not a message of the protocol is reported as a crash, never acted on."""
        found: list[RunMessage] = []
        for line in self._lines.feed(data):
            try:
                if isinstance(line, ProtocolError):
                    raise line
                found.append(checked(line, RunMessage))
            except ProtocolError as exc:
                text = f"unreadable message from the run's process: {exc}"
                found.append(CrashMessage(op="crash", text=text))
        return found

    def _read(self) -> bytes:
        try:
            return os.read(self._fd, _CHUNK)
        except OSError:
            return b""

    # -- ending -----------------------------------------------------------------------------

    @property
    def exitcode(self) -> int | None:
        """The exit status once the child has ended (and `close` has seen it)."""
        if self._exitcode is None:
            with contextlib.suppress(LaunchError):
                self._exitcode = self._child.poll()
        return self._exitcode

    def cancel(self) -> None:
        """SIGTERM to the run's process group (no wait)."""
        self._signal(signal.SIGTERM)

    def close(self) -> None:
        """Waits for the child to exit (it does once its result is sent); kills it when it
        does not within the grace period. `LaunchError` when the zygote died under it."""
        try:
            self._exitcode = self._child.wait(CANCEL_GRACE_S)
            if self._exitcode is None:
                self._signal(signal.SIGKILL)
                self._exitcode = self._child.wait()
        finally:
            self._close_pipe()

    def stop(self) -> None:
        """Cancels and waits, blocking: SIGTERM, then SIGKILL after the grace period."""
        if self.exitcode is None:
            self.cancel()
        self.close()

    async def astop(self) -> None:
        """`stop` without blocking the event loop."""
        if self.exitcode is None:
            self.cancel()
        await self.aclose()

    async def aclose(self) -> None:
        try:
            deadline = time.monotonic() + CANCEL_GRACE_S
            while (code := self._child.poll()) is None and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            if code is None:
                self._signal(signal.SIGKILL)
                while (code := self._child.poll()) is None:
                    await asyncio.sleep(0.02)
            self._exitcode = code
        finally:
            self._close_pipe()

    def _close_pipe(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)

    def _signal(self, signum: int) -> None:
        self._child.signal(signum)
