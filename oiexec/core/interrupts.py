"""Sections a signal must not cut in half.

`--timeout` (SIGALRM), Ctrl-C and SIGTERM end a run by raising from their signal handlers in
the main thread, wherever it is. Between starting a command and recording it for cleanup
that would leave the command running with nobody to kill it, so such steps run inside
`uninterruptible()`: a signal arriving there is held and raised as the section ends, once
the command can be found by cleanup.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

__all__ = ["deliver", "uninterruptible"]

_depth = 0
_held: list[BaseException] = []


@contextlib.contextmanager
def uninterruptible() -> Iterator[None]:
    """Hold signal-raised exceptions (see `deliver`) until the block has finished."""
    global _depth
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers only ever run in the main thread
        return
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0 and _held:
            exc = _held[0]
            _held.clear()
            raise exc


def deliver(exc: BaseException) -> None:
    """What a signal handler calls instead of `raise exc`: raises now, or when the
    `uninterruptible()` section the main thread is in ends."""
    if _depth:
        _held.append(exc)
        return
    raise exc
