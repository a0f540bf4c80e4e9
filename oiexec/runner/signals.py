"""Signals that end a run cleanly: `--timeout` (SIGALRM), Ctrl-C (SIGINT) and CI
cancellation (SIGTERM)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

from oiexec.core.errors import Interrupted, RunTimedOut
from oiexec.core.interrupts import deliver


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
        deliver(RunTimedOut("time limit reached: the run exceeded --timeout"))

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, max(0.001, deadline - time.monotonic()))
    try:
        with _redelivered(lambda exc: isinstance(exc, RunTimedOut), signal.SIGALRM):
            yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def interrupt_signals() -> Iterator[None]:
    """SIGINT (Ctrl-C) and SIGTERM (a CI runner cancelling the job) end the run as
    `Interrupted`: the turn ends with `turn.failed`, process groups are killed, the session and
    reports are written, and the exit code is 130 or 143.

    Only the first signal interrupts; cleanup must not be cut short by the next one (GitHub
    Actions sends SIGINT, then SIGTERM 7.5 s later). A second signal while cleaning up means
    the user insists: exit at once with the first signal's code, as a shell would.
    """
    if not _main_thread():
        yield
        return
    first: list[Interrupted] = []
    #: Set when the first signal's exception was dropped (see `_redelivered`): the handler
    #: runs once more to raise it again, which is not the user insisting.
    again: list[bool] = []

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        if again:
            again.clear()
            deliver(first[0])
            return
        if first:
            sys.stderr.write("interrupted again: exiting without cleanup\n")
            sys.stderr.flush()
            os._exit(int(first[0].exit_code))
        first.append(Interrupted("SIGTERM" if signum == signal.SIGTERM else "SIGINT"))
        _watch_cleanup()
        deliver(first[0])

    def dropped(exc: BaseException) -> bool:
        if first and exc is first[0]:
            again.append(True)
            return True
        return False

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with _redelivered(dropped, signal.SIGTERM):
            yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if first:
            import faulthandler

            faulthandler.cancel_dump_traceback_later()


#: How soon a dropped signal exception is raised again: long enough for the hook that saw it
#: dropped to have returned, short enough not to be noticed.
_REDELIVER_S = 0.01


@contextlib.contextmanager
def _redelivered(ours: Callable[[BaseException], bool], signum: signal.Signals) -> Iterator[None]:
    """A signal handler's exception raised where Python can only print it and go on (inside
    a finalizer or a garbage-collector callback that the signal happened to interrupt) is
    raised again, at the main thread's next step: otherwise the run never learns of its
    signal (seen: a batch task that printed "Exception ignored in: ... Interrupted", went on
    waiting for its command and was killed at the batch's grace). `ours` tells our
    exceptions apart (and may note that one is on its way again); `signum` is sent to the
    main thread once more, which runs the handler again and wakes whatever it is blocked on
    (`_thread.interrupt_main` would run the handler only once that wait has ended)."""
    main = threading.main_thread().ident
    previous = sys.unraisablehook
    pending: list[threading.Timer] = []

    def hook(unraisable: Any) -> None:
        if main is not None and unraisable.exc_value is not None and ours(unraisable.exc_value):
            # Shortly, from another thread: run now, the handler would raise inside this
            # hook, where its exception is dropped too.
            again = threading.Timer(_REDELIVER_S, signal.pthread_kill, (main, signum))
            again.daemon = True
            with contextlib.suppress(RuntimeError):  # no thread at interpreter shutdown
                again.start()
                pending.append(again)
            return
        previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous
        # Not after the handler is gone: the signal's default action would kill the process.
        for timer in pending:
            timer.cancel()


#: Cleanup after a signal takes well under a second; a run still alive this long after it is
#: stuck, and whoever sent the signal (a batch after 10 s, GitHub Actions after 7.5 s) is
#: about to kill it outright, with no trace of where it hung.
CLEANUP_STUCK_S = 5.0


def _watch_cleanup() -> None:
    """Arms a dump of every thread's stack to stderr (the task's stderr file in a batch) for
    when cleanup has not ended the run in `CLEANUP_STUCK_S`: a hang there is a bug, and the
    stacks are what finds it. `faulthandler` writes from its own C thread, so a main thread
    stuck on a lock does not stop it."""
    import faulthandler

    with contextlib.suppress(ValueError, OSError, AttributeError):  # stderr closed or not a file
        faulthandler.dump_traceback_later(CLEANUP_STUCK_S, exit=False, file=sys.stderr)
