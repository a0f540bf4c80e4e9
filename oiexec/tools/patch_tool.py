"""The `apply_patch` tool: Codex's freeform (grammar-constrained) tool, or its JSON variant."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from oiexec.core.context import ToolContext
from oiexec.core.events import FileChangeItem, FileUpdateChange
from oiexec.core.types import ToolCall, ToolOutput, ToolSpec
from oiexec.sandbox.writer import PolicyWriter
from oiexec.tools.apply_patch import (
    ApplyPatchError,
    FileChange,
    PatchResult,
    apply_parsed_patch,
    parse_patch,
    plan_changes,
)

TOOL_NAME = "apply_patch"

#: The patch language as a Lark grammar, for providers that constrain freeform tool input.
PATCH_GRAMMAR = r"""
start: "*** Begin Patch" NL operation+ "*** End Patch" NL?

operation: add_file | delete_file | update_file

add_file: "*** Add File: " PATH NL added+
added: "+" TEXT? NL

delete_file: "*** Delete File: " PATH NL

update_file: "*** Update File: " PATH NL moved? edits?
moved: "*** Move to: " PATH NL
edits: (hunk_header | edit_line)+ end_of_file?
hunk_header: "@@" (" " TEXT)? NL
edit_line: EDIT_OP TEXT? NL
end_of_file: "*** End of File" NL

EDIT_OP: " " | "-" | "+"
PATH: /[^\r\n]+/
TEXT: /[^\r\n]+/
NL: "\n"
""".lstrip()

DESCRIPTION = (
    "Edit files with a patch. The input is the patch text itself: it starts with "
    "'*** Begin Patch' and ends with '*** End Patch'. Between them, one section per file:\n"
    "'*** Add File: <path>' followed by the new file's lines, each prefixed with '+';\n"
    "'*** Delete File: <path>';\n"
    "'*** Update File: <path>', optionally '*** Move to: <new path>', then one or more chunks. "
    "A chunk starts with '@@' (or '@@ <a line such as a def or class that precedes the change>') "
    "and lists unchanged context lines prefixed with a space, removed lines with '-', added "
    "lines with '+'. Give about three lines of context around each change, copied exactly "
    "from the file; end a chunk that reaches the end of the file with '*** End of File'.\n"
    "Paths are relative to the working directory. Every chunk is checked before anything is "
    "written: if one does not match, no file changes."
)

_FUNCTION_PARAMETERS = {
    "type": "object",
    "properties": {
        "input": {"type": "string", "description": "The entire patch text."},
    },
    "required": ["input"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class PatchOutcome:
    """What applying one patch produced: the text for the model and whether it succeeded."""

    output: str
    ok: bool
    result: PatchResult | None = None


def _classic(exit_code: int, seconds: float, body: str) -> str:
    return f"Exit code: {exit_code}\nWall time: {seconds:.1f} seconds\nOutput:\n{body}"


def _item_changes(changes: tuple[FileChange, ...] | list[FileChange]) -> list[FileUpdateChange]:
    return [FileUpdateChange(path=str(c.path), kind=c.kind) for c in changes]


def run_patch(patch_text: str, ctx: ToolContext, *, cwd: Path | None = None) -> PatchOutcome:
    """Apply `patch_text` under the sandbox policy and emit its `file_change` item.

    Shared by the tool and by shell interception of `apply_patch <<'EOF'` commands. A patch
    that does not parse emits no item: there is no file to report.
    """
    started = time.monotonic()
    workdir = cwd if cwd is not None else ctx.cwd
    try:
        patch = parse_patch(patch_text)
    except ApplyPatchError as exc:
        return PatchOutcome(exc.message, ok=False)
    item_id = ctx.items.next_id()
    changes = _item_changes(plan_changes(patch, workdir))
    ctx.items.started(FileChangeItem(id=item_id, changes=changes, status="in_progress"))
    try:
        result = apply_parsed_patch(patch, workdir, PolicyWriter(ctx.sandbox.policy))
    except ApplyPatchError as exc:
        ctx.items.completed(FileChangeItem(id=item_id, changes=changes, status="failed"))
        elapsed = time.monotonic() - started
        output = _classic(1, elapsed, exc.message) if exc.kind == "io" else exc.message
        return PatchOutcome(output, ok=False)
    ctx.items.completed(
        FileChangeItem(id=item_id, changes=_item_changes(result.changes), status="completed")
    )
    return PatchOutcome(_classic(0, time.monotonic() - started, result.summary), True, result)


def _patch_text(call: ToolCall) -> str:
    """The patch in a call: raw text for the freeform tool, `input` for the JSON one. Each
    accepts the other's shape, since models mix them up."""
    raw = call.arguments
    if raw.lstrip().startswith("{"):
        try:
            args = json.loads(raw)
        except json.JSONDecodeError as exc:
            if call.call_type == "function":
                raise ValueError(f"arguments are not valid JSON ({exc.msg})") from exc
            return raw
        if not isinstance(args, dict) or not isinstance(args.get("input"), str):
            raise ValueError('expected {"input": "<the patch text>"}')
        text: str = args["input"]
        return text
    return raw


class ApplyPatchTool:
    """Codex's `apply_patch`: a freeform tool constrained by `PATCH_GRAMMAR` by default, or a
    function taking `{"input": <patch>}` with `freeform=False`."""

    def __init__(self, *, freeform: bool = True, name: str = TOOL_NAME) -> None:
        self._freeform = freeform
        self._name = name

    @property
    def spec(self) -> ToolSpec:
        if self._freeform:
            return ToolSpec(
                name=self._name,
                description=DESCRIPTION,
                type="custom",
                format={"type": "grammar", "syntax": "lark", "definition": PATCH_GRAMMAR},
            )
        return ToolSpec(name=self._name, description=DESCRIPTION, parameters=_FUNCTION_PARAMETERS)

    def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutput:
        try:
            text = _patch_text(call)
        except ValueError as exc:
            return ToolOutput(
                call_id=call.call_id,
                output=f"{self._name}: {exc}",
                call_type=call.call_type,
                is_error=True,
            )
        outcome = run_patch(text, ctx)
        return ToolOutput(
            call_id=call.call_id,
            output=outcome.output,
            call_type=call.call_type,
            is_error=not outcome.ok,
        )
