"""The `apply_patch` tool: Codex's freeform (grammar-constrained) tool, or its JSON variant,
and `run_patch`, which applies a patch for it, for shell `apply_patch <<'EOF'` commands and
for the patch adapters."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from oiexec.core.context import ToolContext
from oiexec.core.errors import ToolInputError
from oiexec.core.events import FileChangeItem, FileUpdateChange
from oiexec.tools.apply_patch import (
    ApplyPatchError,
    FileChange,
    PatchResult,
    apply_parsed_patch,
    parse_patch,
    plan_changes,
)
from oiexec.tools.framework import Invocation
from oiexec.tools.refusals import policy_writer
from oiexec.tools.results import Result


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
        result = apply_parsed_patch(patch, workdir, policy_writer(ctx))
    except ApplyPatchError as exc:
        ctx.items.completed(FileChangeItem(id=item_id, changes=changes, status="failed"))
        elapsed = time.monotonic() - started
        output = _classic(1, elapsed, exc.message) if exc.kind == "io" else exc.message
        return PatchOutcome(output, ok=False)
    ctx.items.completed(
        FileChangeItem(id=item_id, changes=_item_changes(result.changes), status="completed")
    )
    return PatchOutcome(_classic(0, time.monotonic() - started, result.summary), True, result)


def _patch_text(inv: Invocation) -> str:
    """The patch in a call: raw text for the freeform tool, `input` for the JSON one. Each
    accepts the other's shape, since models mix them up."""
    call = inv.call
    raw = call.arguments
    if not raw.lstrip().startswith("{"):
        return raw
    name = inv.entry.name
    try:
        args = json.loads(raw)
    except json.JSONDecodeError as exc:
        if call.call_type == "function":
            raise ToolInputError(f"{name}: arguments are not valid JSON ({exc.msg})") from exc
        return raw
    if not isinstance(args, dict) or not isinstance(args.get("input"), str):
        raise ToolInputError(f'{name}: expected {{"input": "<the patch text>"}}')
    text: str = args["input"]
    return text


def apply_patch(inv: Invocation) -> Result:
    """Codex's `apply_patch`: freeform (grammar-constrained raw text) or a function taking
    `{"input": <patch>}`, as the harness's schema declares."""
    outcome = run_patch(_patch_text(inv), inv.ctx)
    return Result(outcome.output, not outcome.ok)
