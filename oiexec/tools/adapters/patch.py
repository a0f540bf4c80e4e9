"""Patch tools: the `*** Begin Patch` envelope, and a unified diff or whole-file `changes`."""

from __future__ import annotations

from oiexec.core.errors import ToolInputError
from oiexec.tools.apply_patch import apply_unified_diff
from oiexec.tools.framework import Invocation
from oiexec.tools.fs import write_file
from oiexec.tools.patch_tool import run_patch
from oiexec.tools.results import Result


def apply_patch_envelope(inv: Invocation) -> Result:
    text = inv.string("patch")
    if not text:
        raise ToolInputError(f"`{inv.model_name('patch')}` is required.")
    outcome = run_patch(text, inv.ctx)
    if outcome.ok and outcome.result is not None:
        for change in outcome.result.changes:
            inv.rt.files.record_write(change.path)
    return Result(outcome.output, not outcome.ok)


def unified_diff(inv: Invocation) -> Result:
    patch = inv.string("patch")
    changes_arg = inv.args.get("changes")
    guard = inv.rt.can_write(inv.ctx)
    if patch:
        changes = apply_unified_diff(
            patch,
            root=inv.ctx.cwd,
            can_write=guard,
            fuzz=inv.integer("fuzz", 2) or 0,
            create_if_missing=inv.boolean("create_if_missing"),
        )
        done = [(c.move_path or c.path, c.kind) for c in changes]
    elif isinstance(changes_arg, list) and changes_arg:
        done = []
        for entry in changes_arg:
            if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
                raise ToolInputError("Each change needs `path` and `content`.")
            target = inv.ctx.resolve(entry["path"])
            result = write_file(target, str(entry.get("content", "")), can_write=guard)
            done.append((target, "add" if result.created else "update"))
    else:
        raise ToolInputError("Give either `patch` (a unified diff) or `changes`.")
    for path, _kind in done:
        inv.rt.files.record_write(path)
    inv.rt.file_change(inv.ctx, done)
    summary = "\n".join(f"{kind} {path}" for path, kind in done)
    return Result(f"Patch applied to {len(done)} file(s):\n{summary}")
