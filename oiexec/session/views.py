"""Sessions as `interpreter sessions list/show` report them: plain dicts with documented,
stable field names (the `--json` output), built from rollouts.

A session holds one or more runs (the first exec, then each resume): each run starts with a
`turn_context` record (its settings and the overrides it was given) and ends with a
`task_complete` record (its outcome). A run with no `task_complete` was killed: `incomplete`.

`sessions list --json` prints `{"sessions": [row, ...]}`, newest first; a row has `id`,
`path`, `created_at`, `updated_at`, `cwd`, `model_provider`, `model`, `turns` (runs in the
session), `status` (`completed`, `failed`, `interrupted` or `incomplete`, of the latest run),
`exit_code` (null when incomplete), `first_prompt` and `cost_usd` (what the session cost
in USD, earlier runs and a fork's parent included; null when unknown: a run without a known
price, or one recorded before costs were kept).

`sessions show --json` prints one object: `id`, `path`, `created_at`, `cwd`,
`model_provider`, `forked_from_id`, `settings` (the latest run's: `cwd`, `model`,
`model_provider`, `harness`, `sandbox_mode`, `network_access`, `writable_roots`,
`reasoning_effort`, `output_schema`), `turns`, `usage` (cumulative), `cost_usd` (cumulative,
as in the list), `status`, `exit_code`, `failure`, `last_message`, and `runs`: each with
`prompt`, `settings`, `overrides` (`name`, `before`, `after`, `source`, `sandbox`), `status`,
`exit_code`, `failure`, `last_message`, `cost_usd` (that run's; null when unknown or not
recorded) and `items` (the `item.completed` items as `--json` printed them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oiexec.core.types import Message
from oiexec.session.index import Line, SessionInfo, load_rollout, read_lines
from oiexec.session.records import (
    EventMsgRecord,
    ResponseItemRecord,
    TaskComplete,
    ThreadEventMsg,
    TurnContextRecord,
)
from oiexec.session.settings import (
    INCOMPLETE,
    Outcome,
    RunSettings,
    is_run_start,
    outcome_of,
    settings_of,
)

__all__ = ["session_detail", "session_summary"]


def session_summary(info: SessionInfo) -> dict[str, Any]:
    """One row of `sessions list --json`."""
    return {
        "id": info.thread_id,
        "path": str(info.path),
        "created_at": info.created_at,
        "updated_at": info.updated_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "cwd": info.cwd,
        "model_provider": info.model_provider,
        "model": info.model,
        # Runs (exec, then each resume): "turns" in this project are model turns.
        "runs": info.runs,
        "status": info.outcome.status,
        "exit_code": info.outcome.exit_code,
        "first_prompt": info.preview,
        "cost_usd": info.cost_usd,
    }


@dataclass
class _Run:
    settings: dict[str, Any]
    overrides: list[Any]
    prompt: str | None = None
    outcome: Outcome = INCOMPLETE
    cost_usd: float | None = None
    items: list[dict[str, Any]] = field(default_factory=list)

    def wire_dict(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "settings": self.settings,
            "overrides": self.overrides,
            **self.outcome.wire_dict(),
            "cost_usd": self.cost_usd,
            "items": self.items,
        }


def _take(run: _Run, line: Line, awaiting_context: bool) -> None:
    """A record inside a run: its prompt, its outcome, the items it completed."""
    record = line.record
    if isinstance(record, ResponseItemRecord):
        item = record.payload
        opening = run.prompt is None and not awaiting_context
        if opening and isinstance(item, Message) and item.role == "user":
            run.prompt = item.text
    elif isinstance(record, EventMsgRecord):
        event = record.payload
        if isinstance(event, TaskComplete):
            run.outcome = outcome_of(line.payload)
            run.cost_usd = event.cost_usd
        elif isinstance(event, ThreadEventMsg) and event.event is not None:
            completed = (
                event.event.get("item") if event.event.get("type") == "item.completed" else None
            )
            if isinstance(completed, dict):
                run.items.append(completed)


def session_detail(path: Path) -> dict[str, Any]:
    """`sessions show --json`: the session's meta, the latest run's settings, each run with
    its items (the `item.completed` events it mirrored), cumulative usage and the outcome. A
    run starts at its mirrored `thread.started`; its `turn_context` comes a little later."""
    loaded = load_rollout(path)
    runs: list[_Run] = []
    awaiting_context = False
    for line in read_lines(path):
        record, payload = line.record, line.payload
        if is_run_start(record.type, payload):
            runs.append(_Run(RunSettings().wire_dict(), []))
            awaiting_context = True
        elif isinstance(record, TurnContextRecord):
            if not awaiting_context:  # a rollout without mirrored events
                runs.append(_Run(RunSettings().wire_dict(), []))
            awaiting_context = False
            overrides = payload.get("overrides")
            runs[-1].settings = settings_of(payload).wire_dict()
            runs[-1].overrides = overrides if isinstance(overrides, list) else []
        elif runs:
            _take(runs[-1], line, awaiting_context)
    meta = loaded.meta
    return {
        "id": loaded.thread_id,
        "path": str(path),
        "created_at": meta.get("timestamp"),
        "cwd": loaded.cwd,
        "model_provider": loaded.model_provider,
        "forked_from_id": meta.get("forked_from_id"),
        "settings": loaded.settings.wire_dict(),
        "usage": loaded.usage.model_dump(),
        "cost_usd": loaded.cost_usd,
        **loaded.outcome.wire_dict(),
        "runs": [run.wire_dict() for run in runs],
    }
