from __future__ import annotations

import pytest

from oiexec.core.errors import ToolInputError
from oiexec.harness.styles.kimi_cli import todo_text
from oiexec.tools.fs.todo import TodoItem, TodoList


def test_replace_assigns_ids_and_tracks_unfinished() -> None:
    todos = TodoList()
    previous = todos.replace([TodoItem("write test"), TodoItem("fix bug", "in_progress")])
    assert previous == ()
    assert [i.id for i in todos.items] == ["1", "2"]
    todos.replace([TodoItem("write test", "completed"), TodoItem("fix bug", "in_progress")])
    assert [i.content for i in todos.unfinished()] == ["fix bug"]


def test_validation_errors() -> None:
    todos = TodoList(("pending", "in_progress", "done"))
    with pytest.raises(ToolInputError, match="Invalid status 'completed'"):
        todos.replace([TodoItem("x", "completed")])
    with pytest.raises(ToolInputError, match="non-empty"):
        todos.replace([TodoItem("  ")])
    with pytest.raises(ToolInputError, match="unique"):
        todos.replace([TodoItem("a", id="1"), TodoItem("b", id="1")])
    with pytest.raises(ToolInputError, match="unknown ids"):
        todos.replace([TodoItem("a", id="1", blocked_by=("9",))])
    with pytest.raises(ToolInputError, match="cycle: 1 -> 2 -> 1"):
        todos.replace(
            [TodoItem("a", id="1", blocked_by=("2",)), TodoItem("b", id="2", blocked_by=("1",))]
        )
    assert todos.items == ()  # failed replacements leave the list as it was


def test_task_style_create_update_delete() -> None:
    tasks = TodoList(("pending", "in_progress", "completed", "deleted"))
    first = tasks.create("Run tests", active_form="Running tests")
    second = tasks.create("Fix failure")
    assert (first.id, second.id) == ("1", "2")
    updated = tasks.update("1", status="in_progress")
    assert updated is not None and updated.status == "in_progress"
    assert tasks.update("2", status="deleted") is None
    assert [t.id for t in tasks.items] == ["1"]
    assert tasks.create("Next").id == "3"  # ids are never reused
    with pytest.raises(ToolInputError, match="No task with id '2'"):
        tasks.get("2")


def test_kimi_rendering() -> None:
    todos = TodoList(("pending", "in_progress", "done"))
    todos.replace([TodoItem("Read code", "done"), TodoItem("Patch", "in_progress")])
    assert todo_text(todos.items) == (
        "Todo list updated.\nCurrent todo list:\n  [done] Read code\n  [in_progress] Patch"
    )
    todos.clear()
    assert todo_text(todos.items) == "Todo list cleared."
