"""The `update_plan` tool: the model's checklist, streamed as one `todo_list` item per turn."""

from __future__ import annotations

import json
from typing import Any

from oiexec.core.context import ToolContext
from oiexec.core.events import TodoEntry, TodoListItem
from oiexec.core.types import ToolCall, ToolOutput, ToolSpec

TOOL_NAME = "update_plan"
STATUSES = ("pending", "in_progress", "completed")

DESCRIPTION = (
    "Record or revise your plan for the task as a short list of steps, each with a status "
    "(pending, in_progress or completed). Send the whole list every time; at most one step "
    "may be in_progress. Use it for multi-step work, and mark steps completed as you finish "
    "them."
)

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "explanation": {"type": "string", "description": "Why the plan changed (optional)."},
        "plan": {
            "type": "array",
            "description": "Every step of the plan, in order.",
            "items": {
                "type": "object",
                "properties": {
                    "step": {"type": "string"},
                    "status": {"type": "string", "enum": list(STATUSES)},
                },
                "required": ["step", "status"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["plan"],
    "additionalProperties": False,
}


class PlanArgumentError(ValueError):
    """Arguments the model sent that do not fit the schema; the message is for the model."""


def parse_plan(arguments: str) -> list[tuple[str, str]]:
    """The (step, status) pairs of an `update_plan` call, or `PlanArgumentError`."""
    try:
        args = json.loads(arguments) if arguments.strip() else None
    except json.JSONDecodeError as exc:
        raise PlanArgumentError(f"arguments are not valid JSON ({exc.msg})") from exc
    if not isinstance(args, dict):
        raise PlanArgumentError('arguments must be a JSON object with a "plan" array')
    unknown = sorted(set(args) - {"plan", "explanation"})
    if unknown:
        raise PlanArgumentError(f"unknown argument(s): {', '.join(unknown)}")
    if "explanation" in args and not isinstance(args["explanation"], str | None):
        raise PlanArgumentError('"explanation" must be a string')
    plan = args.get("plan")
    if not isinstance(plan, list):
        raise PlanArgumentError('"plan" is required and must be an array of {step, status}')
    steps: list[tuple[str, str]] = []
    for index, entry in enumerate(plan):
        where = f"plan[{index}]"
        if not isinstance(entry, dict):
            raise PlanArgumentError(f"{where} must be an object with step and status")
        extra = sorted(set(entry) - {"step", "status"})
        if extra:
            raise PlanArgumentError(f"{where} has unknown field(s): {', '.join(extra)}")
        step, status = entry.get("step"), entry.get("status")
        if not isinstance(step, str):
            raise PlanArgumentError(f"{where}.step is required and must be a string")
        if status not in STATUSES:
            raise PlanArgumentError(
                f"{where}.status must be one of {', '.join(STATUSES)} (got {json.dumps(status)})"
            )
        steps.append((step, str(status)))
    running = [i for i, (_, status) in enumerate(steps) if status == "in_progress"]
    if len(running) > 1:
        listed = ", ".join(f"plan[{i}]" for i in running)
        raise PlanArgumentError(
            f"at most one step can be in_progress, but {len(running)} are ({listed})"
        )
    return steps


class UpdatePlanTool:
    """Codex's `update_plan`. The first call of a turn starts a `todo_list` item, later calls
    update it, and `finish` completes it once the turn's final message is out."""

    def __init__(self, *, name: str = TOOL_NAME) -> None:
        self._name = name
        self._item: TodoListItem | None = None

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(name=self._name, description=DESCRIPTION, parameters=PARAMETERS)

    def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutput:
        try:
            steps = parse_plan(call.arguments)
        except PlanArgumentError as exc:
            return ToolOutput(
                call_id=call.call_id,
                output=f"{self._name}: {exc}. The plan was not updated.",
                call_type=call.call_type,
                is_error=True,
            )
        entries = [TodoEntry(text=step, completed=status == "completed") for step, status in steps]
        if self._item is None:
            self._item = TodoListItem(id=ctx.items.next_id(), items=entries)
            ctx.items.started(self._item)
        else:
            self._item = TodoListItem(id=self._item.id, items=entries)
            ctx.items.updated(self._item)
        return ToolOutput(call_id=call.call_id, output="Plan updated", call_type=call.call_type)

    def finish(self, ctx: ToolContext) -> None:
        """Complete the turn's `todo_list` item, if a plan was made; the next turn starts anew."""
        if self._item is not None:
            ctx.items.completed(self._item)
            self._item = None
