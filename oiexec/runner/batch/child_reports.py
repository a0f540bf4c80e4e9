"""What a task's own process reported, read back into its record: its JSONL events and its
JUnit report. Both lie in a directory the task's sandbox may reach, so every value is checked
as untrusted (a known class, a finite cost, a whole count) and files are read confined and
bounded (`read_output`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from oiexec.core.errors import FAILURE_CLASSES
from oiexec.runner.batch.record import TaskRecord, Tokens, is_session_id, read_output

__all__ = ["read_events", "read_junit"]


def read_events(out: Path, path: Path, record: TaskRecord) -> None:
    """Session id, tokens and the failure message, from the child's JSONL."""
    raw = read_output(out, path)
    if raw is None:
        return
    lines = raw.decode("utf-8", errors="replace").splitlines()
    for line in lines:
        try:
            event: Any = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        kind = event.get("type")
        if kind == "thread.started" and record.session_id is None:
            thread_id = event.get("thread_id")
            valid = isinstance(thread_id, str) and is_session_id(thread_id)
            record.session_id = thread_id if valid else None
        elif kind in ("turn.completed", "turn.failed"):
            if kind == "turn.completed":  # the session's: every attempt of the task
                record.cost_usd = _usd(event.get("session_cost_usd"))
            usage = event.get("usage")
            if isinstance(usage, dict):  # cumulative for the thread: the last one counts
                record.tokens = Tokens(
                    input=_count(usage.get("input_tokens")),
                    cached_input=_count(usage.get("cached_input_tokens")),
                    output=_count(usage.get("output_tokens")),
                    reasoning=_count(usage.get("reasoning_output_tokens")),
                )
            if kind == "turn.failed":
                error = event.get("error")
                if isinstance(error, dict):
                    record.message = str(error.get("message") or "") or None
                # The task could have written it: a known class or none.
                said = event.get("failure_class")
                record.failure_class = said if said in FAILURE_CLASSES else None


def _usd(value: Any) -> float | None:
    """A cost from the task's reports, which the task could have written itself: None (unknown)
    for anything that is not a finite amount a run could have spent."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if 0 <= value <= 1e12 else None  # NaN fails both comparisons


def _count(value: Any) -> int:
    """A token count from the task's events, which the task could have written itself: 0 for
    anything that is not a whole number."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def read_junit(out: Path, path: Path, record: TaskRecord, earlier_turns: int) -> None:
    """Model turns (added to the earlier runs' on a resume), the task's cost (its session's,
    earlier attempts included) and, where the JSONL could not say (`turn.failed` carries no
    usage), the tokens: from the properties of the child's JUnit report, which it writes on
    every exit it lives to see."""
    import xml.etree.ElementTree as ElementTree

    record.turns = earlier_turns
    raw = read_output(out, path, max_bytes=64 * 1024 * 1024)
    if raw is None:
        return  # killed outright: what the events said stands
    try:
        root = ElementTree.fromstring(raw)
    except ElementTree.ParseError:
        return
    props = {p.get("name"): p.get("value") for p in root.iter("property")}

    def number(name: str) -> int:
        try:
            return int(props.get(name) or 0)
        except ValueError:
            return 0

    record.turns = earlier_turns + number("model_turns")
    if "session_cost_usd" in props:  # written on every exit, `turn.failed`'s included
        record.cost_usd = _usd(props["session_cost_usd"])
    # This run's own: a resumed task whose last run wrote is not refused by an earlier one.
    record.refused_writes = max(0, number("sandbox_refused_writes"))
    if not any(vars(record.tokens).values()):
        record.tokens = Tokens(
            input=number("input_tokens"),
            cached_input=number("cached_input_tokens"),
            output=number("output_tokens"),
            reasoning=number("reasoning_output_tokens"),
        )
