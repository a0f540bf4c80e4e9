"""The caller's side of a run's child process: start it, read its messages (blocking or on
the event loop), cancel it.

Each run is a fork of the preloaded server (runner/forkserver.py), in its own process group.
Cancelling sends SIGTERM to that group, which the runner handles as the CLI does (the turn
ends, every command the model started is killed, the session is written); a run still alive
after `CANCEL_GRACE_S` gets SIGKILL.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from oiexec.api.child import ExecJob, ReviewJob, child_main
from oiexec.runner.forkserver import preloaded_context, start_without_main

__all__ = ["CANCEL_GRACE_S", "Message", "RunProcess"]

#: How long a cancelled run may take to end cleanly before it is killed.
CANCEL_GRACE_S = 10.0

Message = tuple[Any, ...]


class RunProcess:
    """One started run. Not thread-safe except `cancel`, which any thread may call."""

    def __init__(self, job: ExecJob | ReviewJob, env: Mapping[str, str], cwd: str) -> None:
        context = preloaded_context()
        reader, writer = context.Pipe(duplex=False)
        self._process = context.Process(
            target=child_main, args=(job, writer, dict(env), cwd), daemon=False
        )
        start_without_main(self._process)
        writer.close()  # the child holds the only writer: its exit is our end of file
        self._conn = reader
        pid = self._process.pid
        assert pid is not None  # set by start()
        self.pid: int = pid
        self.cancelled = False

    # -- reading ----------------------------------------------------------------------------

    def messages(self) -> Iterator[Message]:
        """The child's messages until it closes the pipe (blocking)."""
        while True:
            try:
                message: Message = self._conn.recv()
            except (EOFError, OSError):
                return
            yield message

    async def amessages(self) -> AsyncIterator[Message]:
        """The same, read when the pipe is readable: the event loop is never blocked."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Message | None] = asyncio.Queue()
        fd = self._conn.fileno()

        def readable() -> None:
            try:
                while self._conn.poll():
                    queue.put_nowait(self._conn.recv())
            except (EOFError, OSError):
                loop.remove_reader(fd)
                queue.put_nowait(None)

        loop.add_reader(fd, readable)
        try:
            while (message := await queue.get()) is not None:
                yield message
        finally:
            loop.remove_reader(fd)

    # -- ending -----------------------------------------------------------------------------

    @property
    def exitcode(self) -> int | None:
        return self._process.exitcode

    def cancel(self) -> None:
        """SIGTERM to the run's process group (no wait)."""
        self.cancelled = True
        self._signal(signal.SIGTERM)

    def close(self) -> None:
        """Waits for the child to exit (it does once its result is sent); kills it when it
        does not within the grace period."""
        self._process.join(CANCEL_GRACE_S)
        if self._process.exitcode is None:
            self._signal(signal.SIGKILL)
            self._process.join()
        self._conn.close()

    def stop(self) -> None:
        """Cancels and waits, blocking: SIGTERM, then SIGKILL after the grace period."""
        if self._process.exitcode is None:
            self.cancel()
        self.close()

    async def astop(self) -> None:
        """`stop` without blocking the event loop."""
        if self._process.exitcode is None:
            self.cancel()
        await self.aclose()

    async def aclose(self) -> None:
        deadline = time.monotonic() + CANCEL_GRACE_S
        while self._process.exitcode is None and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        if self._process.exitcode is None:
            self._signal(signal.SIGKILL)
            while self._process.exitcode is None:
                await asyncio.sleep(0.02)
        self._process.join()
        self._conn.close()

    def _signal(self, signum: int) -> None:
        try:
            os.killpg(self.pid, signum)
        except ProcessLookupError:
            # Not yet its own group leader (or already gone): signal the process itself.
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)
