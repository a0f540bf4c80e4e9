"""The one way a tool is declared: a manifest entry over a registered implementation.

A `[[tools]]` entry of a harness manifest names an implementation (`impl`), renames the
model's arguments onto the implementation's (`args`), picks the wording of its results
(`render`) and sets limits and options; its schema comes from the harness's `tools.json`.
Implementations are listed in `oiexec.tools.table` (where each lives and its options model)
and imported on first lookup in `IMPLS`; `ManifestTool` checks a call against the schema
before the implementation runs, hands it an `Invocation` and the per-run `Runtime`, and turns
a raised `ToolInputError` into an error result worded by the harness's style. Tools with raw
input (a freeform patch) receive the argument text unparsed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from oiexec.core.context import ToolContext
from oiexec.core.errors import ToolInputError
from oiexec.core.events import FileChangeItem, FileUpdateChange, TodoEntry, TodoListItem
from oiexec.core.tokens import BYTES_PER_TOKEN, truncate_middle
from oiexec.core.types import ToolCall, ToolOutput, ToolSpec
from oiexec.sandbox.writer import PolicyWriter
from oiexec.tools.entry import ToolEntry
from oiexec.tools.process import ProcessRegistry
from oiexec.tools.refusals import policy_writer
from oiexec.tools.results import Result
from oiexec.tools.schema import ArgumentSchema
from oiexec.tools.style import Style
from oiexec.tools.table import TABLE, load_function

if TYPE_CHECKING:
    from oiexec.tools.fs import FileStateTracker, TodoList
    from oiexec.tools.options import ToolOptions

    OptionsT = TypeVar("OptionsT", bound=ToolOptions)

__all__ = ["IMPLS", "Invocation", "ManifestTool", "Runtime", "register"]

#: Room above a cap for what a tool puts around the output it cut (Codex's header with the
#: exit code and token count, a product's truncation note), so the backstop never cuts twice.
FRAMING_TOKENS = 1_024


@dataclass
class Runtime:
    """State the tools of one harness share for a run."""

    #: The harness's wording of failures (`Style.error`).
    style: Style
    processes: ProcessRegistry = field(default_factory=ProcessRegistry)
    shell: str = "/bin/bash"
    #: Most tokens of command output a Codex-style tool returns (`tool_output_token_limit`).
    output_token_limit: int = 10_000
    #: Environment added to every command (a manifest's `env`, e.g. pager settings).
    env: dict[str, str] = field(default_factory=dict)
    #: Earlier contents of edited files, for `str_replace_editor undo_edit`.
    undo: dict[Path, list[str | None]] = field(default_factory=dict)
    #: Named flags implementations keep between calls (a submit that asks twice).
    flags: set[str] = field(default_factory=set)
    #: Extra state implementations keep (background tasks, shell and interpreter sessions).
    extras: dict[str, Any] = field(default_factory=dict)
    #: Call id -> submission of a call that ended the run (read by the harness).
    submissions: dict[str, str] = field(default_factory=dict)
    #: Where changes to the read-before-write state go (the rollout), and the entries an
    #: earlier run of the thread left there (restored on first use): tools/fs/state.py.
    file_journal: Callable[[dict[str, Any]], None] | None = None
    restored_files: Sequence[Mapping[str, Any]] = ()
    _todo_item: TodoListItem | None = None

    # The file tools' state is made on first use: harnesses without file tools (the Codex
    # set) must not pay for importing them at start-up.
    @cached_property
    def files(self) -> FileStateTracker:
        from oiexec.tools.fs import FileStateTracker

        tracker = FileStateTracker(journal=self.file_journal)
        tracker.restore(self.restored_files)
        return tracker

    @cached_property
    def todos(self) -> TodoList:
        from oiexec.tools.fs import TodoList

        return TodoList()

    def can_write(self, ctx: ToolContext) -> PolicyWriter:
        """The run's writer: judges paths by the sandbox policy, writes without following
        symlinks, and counts what the read-only policy refuses (tools/refusals)."""
        return policy_writer(ctx)

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
        """Publish the run's todo list (`todos`) as the turn's `todo_list` item."""
        from oiexec.tools.fs.todo import FINISHED

        entries = [
            TodoEntry(text=item.content, completed=item.status in FINISHED)
            for item in self.todos.items
        ]
        self.publish_plan(ctx, entries)

    def publish_plan(self, ctx: ToolContext, entries: Sequence[TodoEntry]) -> None:
        """Start the turn's `todo_list` item with `entries`, or update it; `finish`
        completes it."""
        if self._todo_item is None:
            self._todo_item = TodoListItem(id=ctx.items.next_id(), items=list(entries))
            ctx.items.started(self._todo_item)
        else:
            self._todo_item = TodoListItem(id=self._todo_item.id, items=list(entries))
            ctx.items.updated(self._todo_item)

    def finish(self, ctx: ToolContext) -> None:
        """End of a turn: kill what still runs and complete the todo item (once)."""
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
    style: Style
    #: The call as the model sent it (raw tools read `call.arguments` themselves).
    call: ToolCall

    def opts(self, model: type[OptionsT]) -> OptionsT:
        """The entry's options as its implementation's model (checked when the harness
        loaded; `oiexec.tools.table` says which model an implementation has)."""
        options = self.entry.tool_options()
        if not isinstance(options, model):
            raise TypeError(f"`{self.entry.impl}` options are {type(options).__name__}")
        return options

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


@dataclass(frozen=True)
class _Registered:
    run: Impl
    #: Receives the argument text as sent: no JSON parsing, no schema check.
    raw: bool


class _Implementations(Mapping[str, _Registered]):
    """Implementation name -> function: the table's, imported on first lookup, and those
    added with `register` (tests, code outside the package)."""

    def __init__(self) -> None:
        self._loaded: dict[str, _Registered] = {}
        self._added: dict[str, _Registered] = {}

    def add(self, name: str, registered: _Registered) -> None:
        self._added[name] = registered

    def __getitem__(self, name: str) -> _Registered:
        found = self._loaded.get(name) or self._added.get(name)
        if found is None:
            found = self._loaded[name] = _Registered(load_function(name), TABLE[name].raw)
        return found

    def __contains__(self, name: object) -> bool:
        return name in TABLE or name in self._added

    # `register` refuses the table's names, so the two never overlap.
    def __iter__(self) -> Iterator[str]:
        yield from TABLE
        yield from self._added

    def __len__(self) -> int:
        return len(TABLE) + len(self._added)


IMPLS = _Implementations()


def register(name: str, *, raw: bool = False) -> Callable[[Impl], Impl]:
    """Add an implementation outside `oiexec.tools.table` (a test's, an embedder's) under
    `name`; its entries' options stay untyped (`entry.options`). A name of the table is
    refused: what runs for a shipped `impl` is what the table says."""
    if name in TABLE:
        raise ValueError(f"`{name}` is an implementation of oiexec.tools.table")

    def wrap(func: Impl) -> Impl:
        IMPLS.add(name, _Registered(func, raw))
        return func

    return wrap


class ManifestTool:
    """`Tool` for one `[[tools]]` entry of a manifest."""

    def __init__(
        self, entry: ToolEntry, schema: Mapping[str, Any], runtime: Runtime, style: Style
    ) -> None:
        if entry.impl not in IMPLS:
            raise KeyError(f"no tool implementation `{entry.impl}` (tool `{entry.name}`)")
        self.entry = entry
        self._impl = IMPLS[entry.impl]
        self._rt = runtime
        self._style = style
        description = str(schema.get("description", ""))
        if schema.get("type") == "custom":
            self._spec = ToolSpec(
                name=entry.name, description=description, type="custom", format=schema["format"]
            )
            self._schema: ArgumentSchema | None = None
        else:
            parameters = dict(schema.get("parameters") or {"type": "object", "properties": {}})
            self._spec = ToolSpec(name=entry.name, description=description, parameters=parameters)
            self._schema = ArgumentSchema(parameters)

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutput:
        result = self.invoke(call, ctx)
        if result.submission is not None:
            self._rt.submissions[call.call_id] = result.submission
        return ToolOutput(
            call_id=call.call_id,
            output=truncate_middle(result.text, self.output_ceiling),
            call_type=call.call_type,
            is_error=result.is_error,
        )

    @cached_property
    def output_ceiling(self) -> int:
        """Most tokens one result of this tool may hand the model, whatever the tool: no
        tool returns unbounded output. Tools cut their own output first, in their product's
        wording (Codex's `tool_output_token_limit`, a harness's `max_output_chars`); this
        backstop sits above the larger of the two and only catches what nothing else cut
        (an editor view of a huge file, a product that clips nothing), keeping head and tail
        as Codex does."""
        chars = self.entry.limits.get("max_output_chars") or self.entry.options.get(
            "max_output_chars"
        )
        own = int(chars) // BYTES_PER_TOKEN if chars else 0
        return max(self._rt.output_token_limit, own) + FRAMING_TOKENS

    def invoke(self, call: ToolCall, ctx: ToolContext) -> Result:
        """Run the call; bad input and tool failures come back as error results."""
        style = self._rt.style
        try:
            args = {} if self._impl.raw else self._arguments(call.arguments)
            return self._impl.run(Invocation(args, self.entry, ctx, self._rt, self._style, call))
        except ToolInputError as exc:
            return Result(style.error(exc.message), True)
        except OSError as exc:
            return Result(style.error(f"{exc.strerror or exc}: {exc.filename or ''}"), True)

    def _arguments(self, text: str) -> dict[str, Any]:
        """The call's arguments, checked against the schema and renamed for the
        implementation."""
        try:
            raw = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as exc:
            raise ToolInputError(f"Invalid JSON arguments: {exc.msg}") from exc
        if not isinstance(raw, dict):
            raise ToolInputError("Arguments must be a JSON object.")
        problems = self._schema.problems(raw) if self._schema is not None else []
        if problems:
            detail = "; ".join(problems[:3])
            raise ToolInputError(f"InputValidationError: {self.entry.name}: {detail}")
        return {self.entry.args.get(str(key), str(key)): value for key, value in raw.items()}
