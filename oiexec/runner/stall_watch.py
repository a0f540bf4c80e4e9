"""Puts the stall watchdog (agent/stall.py) on a run's loop when `--stall-turns` or
`stall_turns` asks for it: it taps the loop's `record` and `on_step` seams, reads the
commands the run's collector has seen, and fingerprints the workspace with the snapshot
`--diff` uses (a git tree in a private index: the user's index, HEAD and stash untouched).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from oiexec.core.events import CommandExecutionItem
from oiexec.core.types import HistoryItem

if TYPE_CHECKING:
    from oiexec.agent.loop import AgentLoop
    from oiexec.output.diff import Baseline
    from oiexec.runner.prepare import Prepared

__all__ = ["watch_stalls"]


def watch_stalls(
    loop: AgentLoop,
    p: Prepared,
    commands: Sequence[CommandExecutionItem],
    warn: Callable[[str], None],
    stack: contextlib.ExitStack,
) -> None:
    """Adds the watchdog to `loop` when the run sets a limit; `commands` is the run's list of
    completed commands, read as it grows."""
    limit = p.request.stall_turns or p.config.settings.stall_turns
    if limit is None:
        return
    from oiexec.agent.stall import StallWatchdog

    workspace = _Fingerprint(p.request.cwd, warn, stack)
    watchdog = StallWatchdog(limit, lambda: commands, workspace)
    record, on_step = loop.record, loop.on_step

    def recorded(item: HistoryItem) -> None:
        record(item)
        watchdog.record(item)

    def stepped(number: int) -> None:
        watchdog.step(number)  # first: a stalled run shows no new step
        on_step(number)

    loop.record, loop.on_step = recorded, stepped


class _Fingerprint:
    """The workspace's git tree now, or None (said once) when it cannot be taken."""

    def __init__(self, cwd: Path, warn: Callable[[str], None], stack: contextlib.ExitStack):
        self._cwd, self._warn, self._stack = cwd, warn, stack
        self._baseline: Baseline | None = None
        self._broken = False

    def __call__(self) -> str | None:
        if self._broken:
            return None
        try:
            if self._baseline is None:
                from oiexec.output.diff import Baseline

                self._baseline = Baseline.capture(self._cwd)
                self._stack.callback(self._baseline.close)
                return self._baseline.tree
            return self._baseline.snapshot()
        except Exception as exc:  # the watchdog must never be what fails a run
            self._broken = True
            # Without a fingerprint every turn counts as a change: the watchdog stops nothing.
            self._warn(f"stall watchdog off: cannot snapshot the workspace ({exc})")
            return None
