"""Making a loaded history sendable again: what a killed run left open, and calls no
request could carry.

A run killed mid-turn (`kill -9`, the machine lost) may have recorded a tool call whose output
it never recorded. Providers reject a call without its output, so each such call gets a
synthetic one, placed right after the calls and outputs that follow it (where the chat wire
needs every tool message).

A session written before calls were screened (core/call_screen.py) may hold a call with
arguments of many megabytes, which made every resume fail as too long for the model: such a
call gets the same stub a live run gives it (its output stays as recorded).

The rollout itself is left as written: this happens on every load.
"""

from __future__ import annotations

from collections.abc import Sequence

from oiexec.core.call_screen import screen_history
from oiexec.core.types import HistoryItem, ToolCall, ToolOutput

__all__ = ["KILLED_OUTPUT", "close_orphan_calls", "repair_history"]

KILLED_OUTPUT = "aborted: the run was killed before this call finished"


def repair_history(history: Sequence[HistoryItem]) -> tuple[list[HistoryItem], int]:
    """`history` made sendable, and how many calls were closed as killed."""
    screened, _shortened = screen_history(history)
    return close_orphan_calls(screened)


def close_orphan_calls(history: list[HistoryItem]) -> tuple[list[HistoryItem], int]:
    """`history` with a synthetic output for each call that has none, and how many."""
    answered = {item.call_id for item in history if isinstance(item, ToolOutput)}
    orphans = [
        item for item in history if isinstance(item, ToolCall) and item.call_id not in answered
    ]
    if not orphans:
        return history, 0
    pending = {call.call_id for call in orphans}
    repaired: list[HistoryItem] = []
    waiting: list[ToolCall] = []
    for item in history:
        if waiting and not isinstance(item, ToolCall | ToolOutput):
            repaired.extend(_killed(call) for call in waiting)
            waiting = []
        repaired.append(item)
        if isinstance(item, ToolCall) and item.call_id in pending:
            waiting.append(item)
    repaired.extend(_killed(call) for call in waiting)
    return repaired, len(orphans)


def _killed(call: ToolCall) -> ToolOutput:
    return ToolOutput(
        call_id=call.call_id, output=KILLED_OUTPUT, call_type=call.call_type, is_error=True
    )
