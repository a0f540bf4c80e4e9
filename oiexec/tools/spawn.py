"""Starting a command so that it ends with the runner.

Commands end with the runner, even a SIGKILLed one (Linux): the first process of each command
(bwrap's wrapper shell, or the command itself under Landlock) gets a parent-death signal,
SIGKILL. What that process started goes with it through the sandbox: bwrap dies with its
wrapper and its PID namespace with it; the Landlock backend's reaper sees the runner's end of
its socket close (see oiexec/sandbox/reaper.py). The kernel sends the signal when the *thread*
that forked the child ends, so commands are forked only from a thread that lasts as long as
the process: the main thread, or one spawner thread kept for the purpose.
"""

from __future__ import annotations

import ctypes
import os
import queue
import signal
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

__all__ = ["spawner", "tied_to_runner"]

_T = TypeVar("_T")
_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None


def tied_to_runner(inner: Callable[[], object] | None) -> Callable[[], object] | None:
    """`inner` (the sandbox's preexec_fn), preceded in the child by PR_SET_PDEATHSIG=SIGKILL.

    A runner that died between fork and prctl would never send the signal: the child then
    has a new parent and kills itself. Set first, so nothing the child does before exec runs
    untied; dropping capabilities (Landlock backend) keeps the setting, as the kernel clears
    it only when credentials are raised or changed, never when they shrink.
    """
    libc = _libc
    if libc is None:
        return inner
    runner = os.getpid()

    def preexec() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != runner:
            os.kill(os.getpid(), signal.SIGKILL)
        if inner is not None:
            inner()

    return preexec


class _Spawner:
    """Forks on one long-lived daemon thread for callers on other threads (see the module
    doc: a child's parent-death signal follows the thread that forked it)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def run(self, job: Callable[[], _T]) -> _T:
        if threading.current_thread() is threading.main_thread() or _libc is None:
            return job()
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._serve, name="oiexec-spawner", daemon=True
                )
                self._thread.start()
        done: Future[_T] = Future()
        self._jobs.put((job, done))
        return done.result()

    def _serve(self) -> None:
        while True:
            job, done = self._jobs.get()
            try:
                done.set_result(job())
            except BaseException as exc:
                done.set_exception(exc)


#: The one spawner of the process.
spawner = _Spawner()
