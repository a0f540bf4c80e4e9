"""The todo/task list state behind every harness's todo, task and checklist tools.

One model for all of them: items with an id, text, status and optional extras; each harness
picks the statuses it allows and how its tool maps onto `replace`/`create`/`update`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from oiexec.core.errors import ToolInputError

DEFAULT_STATUSES: tuple[str, ...] = ("pending", "in_progress", "completed")
#: Statuses that count as finished when deciding what still needs doing.
FINISHED: frozenset[str] = frozenset({"completed", "done", "cancelled"})


@dataclass(frozen=True)
class TodoItem:
    """One entry. `id` is assigned by the list when the tool has no ids of its own."""

    content: str
    status: str = "pending"
    id: str = ""
    active_form: str | None = None
    priority: str | None = None
    description: str | None = None
    blocked_by: tuple[str, ...] = ()

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


class TodoList:
    """An ordered list of todo items for one run."""

    def __init__(self, statuses: Sequence[str] = DEFAULT_STATUSES) -> None:
        self.statuses = tuple(statuses)
        self._items: list[TodoItem] = []
        self._next_id = 1

    @property
    def items(self) -> tuple[TodoItem, ...]:
        return tuple(self._items)

    def unfinished(self) -> tuple[TodoItem, ...]:
        return tuple(item for item in self._items if not item.finished)

    def replace(self, items: Sequence[TodoItem]) -> tuple[TodoItem, ...]:
        """Swap in a whole new list (the TodoWrite style); returns the previous one.
        Items without an id get one; ids must be unique and dependencies acyclic."""
        staged = [self._with_id(item, index) for index, item in enumerate(items, start=1)]
        self._validate(staged)
        previous = self.items
        self._items = staged
        return previous

    def clear(self) -> None:
        self._items = []

    def create(self, content: str, **extra: Any) -> TodoItem:
        """Append a new pending item with the next numeric id (TaskCreate)."""
        item = TodoItem(content=content, id=str(self._next_id), **extra)
        self._validate([*self._items, item])
        self._next_id += 1
        self._items.append(item)
        return item

    def get(self, item_id: str) -> TodoItem:
        for item in self._items:
            if item.id == item_id:
                return item
        known = ", ".join(item.id for item in self._items) or "none"
        raise ToolInputError(f"No task with id {item_id!r} (known ids: {known}).")

    def update(self, item_id: str, **changes: Any) -> TodoItem | None:
        """Change fields of one item; status `deleted` removes it (returns None)."""
        current = self.get(item_id)
        if changes.get("status") == "deleted":
            self._items = [item for item in self._items if item.id != item_id]
            return None
        updated = replace(current, **changes)
        staged = [updated if item.id == item_id else item for item in self._items]
        self._validate(staged)
        self._items = staged
        return updated

    def _with_id(self, item: TodoItem, index: int) -> TodoItem:
        return item if item.id else replace(item, id=str(index))

    def _validate(self, items: Sequence[TodoItem]) -> None:
        ids = [item.id for item in items]
        for item in items:
            if not item.content.strip():
                raise ToolInputError("Every todo item needs non-empty content.")
            if item.status not in self.statuses:
                allowed = ", ".join(self.statuses)
                raise ToolInputError(
                    f"Invalid status {item.status!r} for {item.content!r}; use one of: {allowed}."
                )
            missing = [dep for dep in item.blocked_by if dep not in ids]
            if missing:
                raise ToolInputError(f"Item {item.id} is blocked by unknown ids: {missing}.")
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ToolInputError(f"Todo ids must be unique; repeated: {', '.join(duplicates)}.")
        _check_acyclic(items)


def _check_acyclic(items: Sequence[TodoItem]) -> None:
    deps = {item.id: item.blocked_by for item in items}
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done

    def visit(node: str, path: list[str]) -> None:
        if state.get(node) == 2:
            return
        if state.get(node) == 1:
            cycle = " -> ".join([*path[path.index(node) :], node])
            raise ToolInputError(f"Todo dependencies form a cycle: {cycle}.")
        state[node] = 1
        for dep in deps.get(node, ()):
            visit(dep, [*path, node])
        state[node] = 2

    for node in deps:
        visit(node, [])
