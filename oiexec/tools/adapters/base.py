"""Manifest tools: a model-facing name and schema over a shared implementation.

A `[[tools]]` entry of a harness manifest names an implementation (`impl`), renames the
model's arguments onto the implementation's (`args`), picks a result renderer (`render`) and
sets limits and options. Implementations register themselves in `IMPLS`; they get the
adapted arguments and the per-run `Runtime`, and return a `Result` or raise
`ToolInputError`, which the tool renders in the harness's error convention.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oiexec.core.context import ToolContext
from oiexec.core.errors import ToolInputError
from oiexec.core.events import FileChangeItem, FileUpdateChange, TodoEntry, TodoListItem
from oiexec.core.types import ToolCall, ToolOutput, ToolSpec
from oiexec.sandbox.writer import PolicyWriter
from oiexec.tools.entry import ToolEntry
from oiexec.tools.fs import FileStateTracker, TodoList
from oiexec.tools.fs.todo import FINISHED
from oiexec.tools.process import ProcessRegistry
from oiexec.tools.style import Style

__all__ = [
    "IMPLS",
    "Invocation",
    "ManifestTool",
    "Result",
    "Runtime",
    "error_text",
    "register",
]


@dataclass(frozen=True)
class Result:
    text: str
    is_error: bool = False
    #: Ends the run with this text as the final answer (SWE-agent submit).
    submission: str | None = None


@dataclass
class Runtime:
    """State the tools of one harness share for a run."""

    #: The harness's wording of failures (`Style.error`).
    style: Style
    files: FileStateTracker = field(default_factory=FileStateTracker)
    todos: TodoList = field(default_factory=TodoList)
    processes: ProcessRegistry = field(default_factory=ProcessRegistry)
    shell: str = "/bin/bash"
    #: Environment added to every command (SWE-agent's pager settings).
    env: dict[str, str] = field(default_factory=dict)
    #: Earlier contents of edited files, for `str_replace_editor undo_edit`.
    undo: dict[Path, list[str | None]] = field(default_factory=dict)
    #: Named flags implementations keep between calls (SWE-agent's first submit).
    flags: set[str] = field(default_factory=set)
    #: Extra state implementations keep (the classic interpreter sessions).
    extras: dict[str, Any] = field(default_factory=dict)
    #: Call id -> submission of a call that ended the run (read by the harness).
    submissions: dict[str, str] = field(default_factory=dict)
    _todo_item: TodoListItem | None = None

    def can_write(self, ctx: ToolContext) -> PolicyWriter:
        """The run's writer: judges paths by the sandbox policy and writes without following
        symlinks (still callable as the old `path -> denial` guard)."""
        return PolicyWriter(ctx.sandbox.policy)

    def file_change(
        self, ctx: ToolContext, changes: Sequence[tuple[Path, str]], *, ok: bool = True
    ) -> None:
        """One completed (or failed) `file_change` item for an in-process edit."""
        item = FileChangeItem(
            id=ctx.items.next_id(),
            changes=[FileUpdateChange(path=str(p), kind=k) for p, k in changes],
            status="completed" if ok else "failed",
        )
        ctx.items.completed(item)

    def publish_todos(self, ctx: ToolContext) -> None:
        """Start or update the turn's `todo_list` item with the current list."""
        entries = [
            TodoEntry(text=item.content, completed=item.status in FINISHED)
            for item in self.todos.items
        ]
        if self._todo_item is None:
            self._todo_item = TodoListItem(id=ctx.items.next_id(), items=entries)
            ctx.items.started(self._todo_item)
        else:
            self._todo_item = TodoListItem(id=self._todo_item.id, items=entries)
            ctx.items.updated(self._todo_item)

    def finish(self, ctx: ToolContext) -> None:
        self.processes.close_all()
        if self._todo_item is not None:
            ctx.items.completed(self._todo_item)
            self._todo_item = None

    def close(self) -> None:
        for closer in [v for v in self.extras.values() if hasattr(v, "close")]:
            closer.close()
        self.processes.close_all()


@dataclass(frozen=True)
class Invocation:
    """One call as an implementation sees it."""

    args: dict[str, Any]
    entry: ToolEntry
    ctx: ToolContext
    rt: Runtime
    #: The wording of this tool's results (the entry's `render`, else plain).
    style: Style = field(default_factory=Style)

    @property
    def render(self) -> str:
        return self.entry.render

    def option(self, name: str, default: Any = None) -> Any:
        if name in self.entry.limits:
            return self.entry.limits[name]
        return self.entry.options.get(name, default)

    def path(self, name: str = "path", *, required: bool = True) -> Path:
        raw = self.args.get(name)
        if not isinstance(raw, str) or not raw:
            if required:
                raise ToolInputError(f"`{self.model_name(name)}` is required.")
            return self.ctx.cwd
        return self.ctx.resolve(raw)

    def model_name(self, canonical: str) -> str:
        for model, impl_name in self.entry.args.items():
            if impl_name == canonical:
                return model
        return canonical

    def string(self, name: str, default: str | None = None) -> str | None:
        value = self.args.get(name, default)
        if value is None:
            return None
        if not isinstance(value, str):
            raise ToolInputError(f"`{self.model_name(name)}` must be a string.")
        return value

    def integer(self, name: str, default: int | None = None) -> int | None:
        value = self.args.get(name)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ToolInputError(f"`{self.model_name(name)}` must be a number.")
        return int(value)

    def boolean(self, name: str, default: bool = False) -> bool:
        value = self.args.get(name)
        return default if value is None else bool(value)


Impl = Callable[[Invocation], Result]
IMPLS: dict[str, Impl] = {}


def register(name: str) -> Callable[[Impl], Impl]:
    def wrap(func: Impl) -> Impl:
        IMPLS[name] = func
        return func

    return wrap


def error_text(style: Style, message: str) -> str:
    """A failure in the harness's convention."""
    return style.error(message)


class ManifestTool:
    """`Tool` for one `[[tools]]` entry of a manifest."""

    def __init__(
        self,
        entry: ToolEntry,
        schema: Mapping[str, Any],
        runtime: Runtime,
        style: Style | None = None,
    ) -> None:
        if entry.impl not in IMPLS:
            raise KeyError(f"no tool implementation `{entry.impl}` (tool `{entry.name}`)")
        self.entry = entry
        self._impl = IMPLS[entry.impl]
        self._rt = runtime
        self._style = style or Style()
        parameters = dict(schema.get("parameters") or {"type": "object", "properties": {}})
        self._spec = ToolSpec(
            name=entry.name, description=str(schema.get("description", "")), parameters=parameters
        )
        self._parameters = parameters
        self._validator: Any = None

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutput:
        result = self.invoke(call, ctx)
        if result.submission is not None:
            self._rt.submissions[call.call_id] = result.submission
        return ToolOutput(
            call_id=call.call_id,
            output=result.text,
            call_type=call.call_type,
            is_error=result.is_error,
        )

    def invoke(self, call: ToolCall, ctx: ToolContext) -> Result:
        """Run the call; bad input and tool failures come back as error results."""
        style = self._rt.style
        try:
            raw = json.loads(call.arguments) if call.arguments.strip() else {}
        except json.JSONDecodeError as exc:
            return Result(error_text(style, f"Invalid JSON arguments: {exc.msg}"), True)
        if not isinstance(raw, dict):
            return Result(error_text(style, "Arguments must be a JSON object."), True)
        problems = sorted(self._validate(raw), key=lambda e: list(e.path))
        if problems:
            detail = "; ".join(_describe(p) for p in problems[:3])
            return Result(
                error_text(style, f"InputValidationError: {self.entry.name}: {detail}"), True
            )
        args = {self.entry.args.get(str(key), str(key)): value for key, value in raw.items()}
        try:
            return self._impl(Invocation(args, self.entry, ctx, self._rt, self._style))
        except ToolInputError as exc:
            return Result(error_text(style, exc.message), True)
        except OSError as exc:
            return Result(error_text(style, f"{exc.strerror or exc}: {exc.filename or ''}"), True)

    def _validate(self, raw: dict[str, Any]) -> list[Any]:
        if self._validator is None:
            # jsonschema costs ~70 ms to import; pay it on the first call, not at start-up.
            from jsonschema import validators

            self._validator = validators.validator_for(self._parameters)(self._parameters)
        return list(self._validator.iter_errors(raw))


def _describe(error: Any) -> str:
    where = ".".join(str(p) for p in error.path)
    return f"{where}: {error.message}" if where else str(error.message)
