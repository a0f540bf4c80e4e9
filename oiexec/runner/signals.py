"""Signals that end a run cleanly: `--timeout` (SIGALRM) and CI cancellation (SIGTERM)."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator
from types import FrameType

from oiexec.core.errors import Interrupted, RunTimedOut


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def deadline_alarm(deadline: float | None) -> Iterator[None]:
    """Makes `--timeout` hard: SIGALRM interrupts whatever the main thread is blocked on
    (a slow stream, a wait on a command); cleanup then kills the process groups."""
    if deadline is None or not _main_thread():
        yield
        return

    def on_alarm(_signum: int, _frame: FrameType | None) -> None:
        raise RunTimedOut("time limit reached: the run exceeded --timeout")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, max(0.001, deadline - time.monotonic()))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """CI cancels jobs with SIGTERM: clean up (kill process groups, close the rollout) as
    for Ctrl-C."""
    if not _main_thread():
        yield
        return

    def on_term(_signum: int, _frame: FrameType | None) -> None:
        raise Interrupted()

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
