"""A signal-raised exception (Ctrl-C, SIGTERM, --timeout raise in the main thread wherever it
is) landing anywhere in the request's side of the idle clock must not leave its lock held:
the watchdog could then never wake, and `close` would join it forever. That hang made a batch
task outlive SIGTERM until the batch killed it (tests/batch/test_early_interrupt.py).

Each test interrupts the step at every point where the interpreter runs a signal handler,
one point per attempt, then checks that `close` still returns at once. Those points are the
start of a Python function and the moment after any call returns, C calls such as a lock's
`acquire` included: the profiler's `call`, `return` and `c_return` events (`sys.setprofile`),
`threading`'s own Python code included. (Not every line, nor just before a C call: a handler
never runs between a `with` body and the `__exit__` that follows it.)"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

import httpx
import pytest

from oiexec.providers.idle import ConnectionLedger, IdleWatch


class _Signal(BaseException):
    """Stands for the exception a signal handler raises."""


def _interrupt_at(point: int, action: Callable[[], object]) -> bool:
    """Runs `action` and raises `_Signal` at its `point`-th profiler event. False when
    `action` finished before reaching that point."""
    seen = 0

    def profiler(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal seen
        if event == "c_call":
            return
        seen += 1
        if seen == point:
            sys.setprofile(None)
            raise _Signal

    sys.setprofile(profiler)
    try:
        action()
    except _Signal:
        return True
    finally:
        sys.setprofile(None)
    return False


def _closes_promptly(watch: IdleWatch) -> bool:
    closer = threading.Thread(target=watch.close, daemon=True)
    closer.start()
    closer.join(timeout=5)
    return not closer.is_alive()


def _response() -> httpx.Response:
    return httpx.Response(200, stream=httpx.ByteStream(b"data: {}\n\n"))


@pytest.mark.parametrize(
    "step",
    [
        lambda watch: watch.attach(_response()),
        lambda watch: watch.progress(),
        lambda watch: watch.extensions["trace"]("http11.receive_response_headers.started", {}),
        lambda watch: watch.close(),
    ],
    ids=["headers arrived", "an event arrived", "waiting for headers", "closing"],
)
def test_an_interrupt_anywhere_in_the_request_side_leaves_close_prompt(
    step: Callable[[IdleWatch], object],
) -> None:
    ledger = ConnectionLedger()
    point = 1
    while True:
        watch = IdleWatch(60.0, ledger)  # a deadline far off: only `close` ends the watchdog
        interrupted = _interrupt_at(point, functools.partial(step, watch))
        assert _closes_promptly(watch), f"close hung after an interrupt at profiler event {point}"
        if not interrupted:
            break  # every point of the step has been tried
        point += 1
    assert point > 3  # the step did run Python code that could be interrupted
