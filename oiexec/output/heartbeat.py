"""`waiting for the model… 15s`: a line on stderr every interval while a model request has
had no answer, so a person (or a CI log) can tell a thinking model from a hung run.

Started by the provider's `waiting()` (a request went out) and stopped by `answered()` (the
first event of the answer arrived, or the request failed; `response.created` and the like
only say the request was taken); a retried request keeps counting from the first attempt.
Only the human transcript has one: with `--json`, stderr is what the Codex SDK quotes back in
its error message when a run fails, so a long wait there would bury the real error.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

__all__ = ["DEFAULT_INTERVAL_S", "INTERVAL_ENV", "Heartbeat", "interval_from_env"]

DEFAULT_INTERVAL_S = 15.0
#: Milliseconds between lines; 0 turns the heartbeat off. Not a config key (the tests shrink
#: it, like OIEXEC_RETRY_BASE_DELAY_MS), so the environment layer leaves it alone.
INTERVAL_ENV = "OIEXEC_HEARTBEAT_INTERVAL_MS"


def interval_from_env() -> float:
    """The interval in seconds: `OIEXEC_HEARTBEAT_INTERVAL_MS`, else 15 s; a value that is
    not a number is ignored rather than failing a run over a display setting."""
    raw = os.environ.get(INTERVAL_ENV, "").strip()
    try:
        return max(0.0, float(raw) / 1000) if raw else DEFAULT_INTERVAL_S
    except ValueError:
        return DEFAULT_INTERVAL_S


def elapsed_text(seconds: float) -> str:
    """`15s`, `45s`, `1m30s`, `12m00s`: seconds, minutes once past one (tenths only for
    the sub-second intervals tests use)."""
    if seconds < 60:
        return f"{round(seconds, 1):g}s"
    whole = int(seconds)
    return f"{whole // 60}m{whole % 60:02d}s"


class Heartbeat:
    """One background thread per wait, writing through `write` every `interval` seconds.

    `write` is called under this object's lock, and `answered()` takes the same lock, so no
    line can appear after `answered()` returns (it would land after the model's output)."""

    def __init__(self, write: Callable[[str], None], interval: float) -> None:
        self._write = write
        self._interval = interval
        self._lock = threading.Lock()
        self._stop: threading.Event | None = None

    def waiting(self) -> None:
        if self._interval <= 0:
            return
        with self._lock:
            if self._stop is not None:
                return  # already counting (a retry of the same request)
            stop = threading.Event()
            self._stop = stop
        thread = threading.Thread(
            target=self._beat, args=(stop, time.monotonic()), name="heartbeat", daemon=True
        )
        thread.start()

    def answered(self) -> None:
        with self._lock:
            if self._stop is not None:
                self._stop.set()
                self._stop = None

    def close(self) -> None:
        self.answered()

    def _beat(self, stop: threading.Event, started: float) -> None:
        beats = 0
        while True:
            beats += 1
            # Against the start, not the last line: a slow write does not stretch the beat.
            delay = started + beats * self._interval - time.monotonic()
            if stop.wait(max(0.0, delay)):
                return
            with self._lock:
                if stop.is_set():
                    return
                # The nominal time (15s, 30s, ...), which the line is due at.
                self._write(f"waiting for the model… {elapsed_text(beats * self._interval)}")
