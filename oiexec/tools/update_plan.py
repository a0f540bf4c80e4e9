"""The `update_plan` tool: the model's checklist, streamed as one `todo_list` item per turn."""

from __future__ import annotations

import json

from oiexec.core.errors import ToolInputError
from oiexec.core.events import TodoEntry
from oiexec.tools.framework import Invocation
from oiexec.tools.results import Result

STATUSES = ("pending", "in_progress", "completed")


def parse_plan(arguments: str) -> list[tuple[str, str]]:
    """The (step, status) pairs of an `update_plan` call.

    Checks what the schema says (a test holds the two to agreement) with messages that name
    the offending step, and the rule the schema cannot say: one step in progress at most.
    """
    try:
        args = json.loads(arguments) if arguments.strip() else None
    except json.JSONDecodeError as exc:
        raise ToolInputError(f"arguments are not valid JSON ({exc.msg})") from exc
    if not isinstance(args, dict):
        raise ToolInputError('arguments must be a JSON object with a "plan" array')
    unknown = sorted(set(args) - {"plan", "explanation"})
    if unknown:
        raise ToolInputError(f"unknown argument(s): {', '.join(unknown)}")
    if "explanation" in args and not isinstance(args["explanation"], str | None):
        raise ToolInputError('"explanation" must be a string')
    plan = args.get("plan")
    if not isinstance(plan, list):
        raise ToolInputError('"plan" is required and must be an array of {step, status}')
    steps: list[tuple[str, str]] = []
    for index, entry in enumerate(plan):
        where = f"plan[{index}]"
        if not isinstance(entry, dict):
            raise ToolInputError(f"{where} must be an object with step and status")
        extra = sorted(set(entry) - {"step", "status"})
        if extra:
            raise ToolInputError(f"{where} has unknown field(s): {', '.join(extra)}")
        step, status = entry.get("step"), entry.get("status")
        if not isinstance(step, str):
            raise ToolInputError(f"{where}.step is required and must be a string")
        if status not in STATUSES:
            raise ToolInputError(
                f"{where}.status must be one of {', '.join(STATUSES)} (got {json.dumps(status)})"
            )
        steps.append((step, str(status)))
    running = [i for i, (_, status) in enumerate(steps) if status == "in_progress"]
    if len(running) > 1:
        listed = ", ".join(f"plan[{i}]" for i in running)
        raise ToolInputError(
            f"at most one step can be in_progress, but {len(running)} are ({listed})"
        )
    return steps


def update_plan(inv: Invocation) -> Result:
    """Codex's `update_plan`: the first call of a turn starts a `todo_list` item, later calls
    update it, and the end of the turn completes it (`Runtime.finish`)."""
    try:
        steps = parse_plan(inv.call.arguments)
    except ToolInputError as exc:
        raise ToolInputError(f"{inv.entry.name}: {exc.message}. The plan was not updated.") from exc
    entries = [TodoEntry(text=step, completed=status == "completed") for step, status in steps]
    inv.rt.publish_plan(inv.ctx, entries)
    return Result("Plan updated")
