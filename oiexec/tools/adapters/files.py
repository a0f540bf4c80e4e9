"""File tools over `oiexec.tools.fs`: read, write, exact replace, glob, grep, list.

Canonical argument names (manifests rename onto them): `path`, `offset`, `limit`, `content`,
`mode`, `old`, `new`, `replace_all`, `edits`, `pattern`, `glob`, `type`, `output_mode`, ...
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from oiexec.core.errors import ToolInputError
from oiexec.sandbox.reader import ReadScope
from oiexec.tools.framework import Invocation
from oiexec.tools.fs import (
    Edit,
    GrepQuery,
    ReadGate,
    ReadResult,
    glob_files,
    grep,
    list_directory,
    read_window,
    replace_in_file,
    write_file,
)
from oiexec.tools.options import (
    FsReadOptions,
    FsReplaceOptions,
    FsWriteOptions,
    GlobOptions,
    GrepOptions,
    ListOptions,
)
from oiexec.tools.results import Result

# --- read -------------------------------------------------------------------------------


def read_scope(inv: Invocation) -> ReadScope:
    """Where this run's tools may read in the runner's process: the workspace and writable
    roots without links out of them, elsewhere what commands may read, never a denied path
    (`oiexec.sandbox.reader`)."""
    return ReadScope.for_policy(inv.ctx.sandbox.policy, inv.ctx.cwd)


def fs_read(inv: Invocation) -> Result:
    path = inv.path()
    offset = inv.integer("offset")
    limit = inv.integer("limit")
    if inv.opts(FsReadOptions).unchanged_note and inv.rt.files.unchanged_since_read(
        path, offset=offset, limit=limit
    ):
        return Result(inv.style.read_unchanged(path, cwd=inv.ctx.cwd))
    try:
        result = _read(inv, path, offset, limit)
    except ToolInputError as exc:
        return inv.style.read_failed(exc, cwd=inv.ctx.cwd)
    inv.rt.files.record_read(path, offset=offset, limit=limit)
    return Result(inv.style.read(result))


def _read(inv: Invocation, path: Path, offset: int | None, limit: int | None) -> ReadResult:
    opts = inv.opts(FsReadOptions)
    return read_window(
        path,
        offset=offset,
        limit=limit,
        base=opts.offset_base,
        default_limit=opts.default_limit,
        max_lines=opts.max_lines,
        max_line_chars=opts.max_line_chars,
        line_cut_suffix=opts.line_cut_suffix,
        max_bytes=opts.max_bytes,
        max_file_bytes=opts.max_file_bytes,
        max_tail=opts.max_tail,
        scope=read_scope(inv),
    )


# --- write ------------------------------------------------------------------------------


def _gate(inv: Invocation, path: Path, *, overwrite: bool) -> Result | None:
    """The read-before-write refusal of harnesses that have one, else None."""
    opts = inv.opts(FsWriteOptions)
    if not opts.require_read:
        return None
    gate = inv.rt.files.check(path)
    message = inv.style.read_gate(gate, path, overwrite=overwrite)
    if message is None:
        return None
    if opts.gate_is_error:
        raise ToolInputError(message, kind="not_read" if gate is ReadGate.NOT_READ else "stale")
    return Result(message)


def fs_write(inv: Invocation) -> Result:
    path = inv.path()
    content = inv.string("content")
    if content is None:
        raise ToolInputError(f"`{inv.model_name('content')}` is required.")
    mode = inv.string("mode", "overwrite")
    if mode not in ("overwrite", "append"):
        raise ToolInputError("mode must be `overwrite` or `append`.")
    refused = _gate(inv, path, overwrite=True)
    if refused is not None:
        return refused
    try:
        result = write_file(path, content, can_write=inv.rt.can_write(inv.ctx), mode=mode)  # type: ignore[arg-type]
    except ToolInputError:
        inv.rt.file_change(inv.ctx, [(path, "update" if path.exists() else "add")], ok=False)
        raise
    inv.rt.files.record_write(path)
    inv.rt.file_change(inv.ctx, [(path, "add" if result.created else "update")])
    return Result(inv.style.written(result, appended=mode == "append"))


# --- exact replace -----------------------------------------------------------------------


def _edits(inv: Invocation) -> list[Edit]:
    raw = inv.args.get("edits")
    if raw is None:
        old, new = inv.args.get("old"), inv.args.get("new")
        if not isinstance(old, str) or not isinstance(new, str):
            raise ToolInputError(
                f"`{inv.model_name('old')}` and `{inv.model_name('new')}` must be strings."
            )
        return [Edit(old, new, inv.boolean("replace_all"))]
    entries: list[Any] = raw if isinstance(raw, list) else [raw]
    edits: list[Edit] = []
    for entry in entries:
        if not isinstance(entry, dict):
            raise ToolInputError("Each edit must be an object with old and new.")
        old = entry.get("old", entry.get("old_string", entry.get("oldText")))
        new = entry.get("new", entry.get("new_string", entry.get("newText")))
        if not isinstance(old, str) or not isinstance(new, str):
            raise ToolInputError("Each edit needs string `old` and `new`.")
        edits.append(Edit(old, new, bool(entry.get("replace_all", False))))
    return edits


def fs_replace(inv: Invocation) -> Result:
    path = inv.path()
    edits = _edits(inv)
    refused = _gate(inv, path, overwrite=False)
    if refused is not None:
        return refused
    try:
        result = replace_in_file(
            path,
            edits,
            can_write=inv.rt.can_write(inv.ctx),
            create_if_empty_old=inv.opts(FsReplaceOptions).create_if_empty_old,
        )
    except ToolInputError as exc:
        message = inv.style.edit_failed(exc, old=edits[0].old)
        raise ToolInputError(message, kind=exc.kind, path=exc.path) from exc
    inv.rt.files.record_write(path)
    inv.rt.file_change(inv.ctx, [(path, "add" if result.created else "update")])
    return Result(inv.style.replaced(result, edits))


# --- glob, grep, list --------------------------------------------------------------------


def glob_tool(inv: Invocation) -> Result:
    opts = inv.opts(GlobOptions)
    pattern = inv.string("pattern") or ""
    if opts.substring and pattern:
        pattern = f"**/*{pattern}*"
    root = inv.path("path", required=False)
    limit = inv.integer("limit") or opts.max_results
    result = glob_files(
        root,
        pattern,
        limit=limit or None,
        sort=opts.sort,
        # Whether `*.py` matches in subfolders too (ripgrep's globs) or only at the root
        # (a path glob, as Qwen Code's).
        basename_anywhere=opts.basename_anywhere,
        include_dirs=inv.boolean("include_dirs", opts.include_dirs),
        scope=read_scope(inv),
    )
    return Result(inv.style.globbed(result, pattern=pattern, root=root))


_MODES = {
    "count_matches": "count",
    "content": "content",
    "files_with_matches": "files_with_matches",
}


def grep_tool(inv: Invocation) -> Result:
    opts = inv.opts(GrepOptions)
    mode = _MODES.get(str(inv.args.get("output_mode") or opts.default_output_mode))
    if mode is None:
        raise ToolInputError(f"Unknown output_mode {inv.args.get('output_mode')!r}.")
    include = inv.args.get("include")
    if isinstance(include, list):
        include = ",".join(str(i) for i in include) or None
    query = GrepQuery(
        pattern=inv.string("pattern") or "",
        path=inv.path("path", required=False),
        output_mode=mode,  # type: ignore[arg-type]
        glob=inv.string("glob") or (include if isinstance(include, str) else None),
        file_type=inv.string("type"),
        case_insensitive=inv.boolean("case_insensitive", opts.ignore_case),
        before=inv.integer("before", 0) or 0,
        after=inv.integer("after", 0) or 0,
        context=inv.integer("context"),
        multiline=inv.boolean("multiline"),
        include_ignored=inv.boolean("include_ignored"),
        head_limit=_head_limit(inv, opts),
        offset=inv.integer("offset", 0) or 0,
        scope=read_scope(inv),
    )
    result = grep(query)
    return Result(inv.style.grepped(result, line_numbers=inv.boolean("line_numbers", True)))


def _head_limit(inv: Invocation, opts: GrepOptions) -> int | None:
    value = inv.integer("head_limit")
    if value is None:
        return opts.head_limit or None
    return None if value == 0 else value


def list_tool(inv: Invocation) -> Result:
    root = inv.path("path", required=False)
    ignore = inv.args.get("ignore") or []
    if not isinstance(ignore, list):
        raise ToolInputError("ignore must be a list of glob patterns.")
    listing = list_directory(
        root,
        depth=inv.opts(ListOptions).depth,
        ignore=[str(i) for i in ignore],
        limit=1000,
        scope=read_scope(inv),
    )
    return Result(inv.style.listed(listing))
