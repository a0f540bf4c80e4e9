"""Todo and task tools over one `TodoList`: whole-list writes (`todos[]` or `plan[]`), one-task
create/update/get/list, and a read-back; each publishes the list as the run's `todo_list`
item."""

from __future__ import annotations

import json
from typing import Any

from oiexec.core.errors import ToolInputError
from oiexec.tools.framework import Invocation
from oiexec.tools.fs import TodoItem
from oiexec.tools.options import TodoOptions, TodoWriteOptions
from oiexec.tools.results import Result

_STATUS_ALIASES = {"done": "completed", "complete": "completed", "cancelled": "cancelled"}


def _item(inv: Invocation, raw: Any) -> TodoItem:
    if not isinstance(raw, dict):
        raise ToolInputError("Each todo must be an object.")
    field = inv.opts(TodoOptions).content_field
    content = raw.get(field)
    if not isinstance(content, str) or not content:
        raise ToolInputError(f"Each todo needs a non-empty `{field}`.")
    status = str(raw.get("status", "pending"))
    status = _STATUS_ALIASES.get(status, status)
    if status not in ("pending", "in_progress", "completed", "cancelled"):
        raise ToolInputError(f"Unknown todo status {raw.get('status')!r}.")
    blocked = raw.get("blockedBy") or ()
    return TodoItem(
        content=content,
        status=status,
        id=str(raw.get("id", "")),
        active_form=raw.get("activeForm"),
        priority=raw.get("priority"),
        blocked_by=tuple(str(b) for b in blocked),
    )


def todo_write(inv: Invocation) -> Result:
    raw = inv.args.get("todos")
    if raw is None:
        if inv.opts(TodoWriteOptions).omit_reads:
            return Result(inv.style.todos_current(inv.rt.todos.items))
        raise ToolInputError(f"`{inv.model_name('todos')}` is required.")
    if not isinstance(raw, list):
        raise ToolInputError("todos must be an array.")
    inv.rt.todos.replace([_item(inv, entry) for entry in raw])
    inv.rt.publish_todos(inv.ctx)
    return Result(inv.style.todos_updated(inv.rt.todos.items))


def plan_write(inv: Invocation) -> Result:
    """`update_plan`-shaped lists: `plan[{step, status}]`."""
    raw = inv.args.get("plan")
    if not isinstance(raw, list):
        raise ToolInputError("plan must be an array of {step, status}.")
    items = [
        _item(inv, {"content": e.get("step"), "status": e.get("status", "pending")})
        if isinstance(e, dict)
        else _item(inv, e)
        for e in raw
    ]
    inv.rt.todos.replace(items)
    inv.rt.publish_todos(inv.ctx)
    return Result("Plan updated")


def task_create(inv: Invocation) -> Result:
    subject = inv.string("subject")
    if not subject:
        raise ToolInputError("`subject` is required.")
    item = inv.rt.todos.create(
        subject, description=inv.string("description"), active_form=inv.string("activeForm")
    )
    inv.rt.publish_todos(inv.ctx)
    return Result(f"Task #{item.id} created successfully: {subject}")


def task_update(inv: Invocation) -> Result:
    task_id = inv.string("taskId") or ""
    changes: dict[str, Any] = {}
    for name, field in (("subject", "content"), ("description", "description")):
        value = inv.string(name)
        if value is not None:
            changes[field] = value
    if inv.args.get("activeForm") is not None:
        changes["active_form"] = inv.string("activeForm")
    status = inv.string("status")
    if status is not None:
        if status not in ("pending", "in_progress", "completed", "deleted"):
            raise ToolInputError(f"Unknown status {status!r}.")
        changes["status"] = status
    updated = inv.rt.todos.update(task_id, **changes)
    inv.rt.publish_todos(inv.ctx)
    if updated is None:
        return Result(f"Task #{task_id} deleted")
    return Result(f"Updated task #{task_id} " + ", ".join(sorted(changes)))


def task_list(inv: Invocation) -> Result:
    items = inv.rt.todos.items
    if not items:
        return Result("No tasks found")
    return Result("\n".join(f"#{i.id} [{i.status}] {i.content}" for i in items))


def task_get(inv: Invocation) -> Result:
    item = inv.rt.todos.get(inv.string("taskId") or "")
    lines = [f"Task #{item.id}: {item.content}", f"Status: {item.status}"]
    if item.description:
        lines.append(f"Description: {item.description}")
    return Result("\n".join(lines))


def todo_read(inv: Invocation) -> Result:
    items = inv.rt.todos.items
    if not items:
        return Result("The todo list is empty.")
    return Result(
        json.dumps(
            [
                {"content": i.content, "status": i.status, "priority": i.priority, "id": i.id}
                for i in items
            ]
        )
    )
