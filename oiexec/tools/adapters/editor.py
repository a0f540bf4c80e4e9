"""A stateful file editor (`view`, `create`, `str_replace`, `insert`, `undo_edit` on one tool,
with an undo history per file) and `submit`, which ends the run with the working-tree diff."""

from __future__ import annotations

import subprocess
from pathlib import Path

from oiexec.core.errors import ToolInputError
from oiexec.git import run_git_text
from oiexec.tools.adapters.files import read_scope
from oiexec.tools.framework import Invocation
from oiexec.tools.fs import (
    Edit,
    insert_lines,
    list_directory,
    read_window,
    replace_in_file,
    write_file,
)
from oiexec.tools.fs._text import guard_write, load_text, remove_file, save_text
from oiexec.tools.options import SubmitOptions
from oiexec.tools.results import Result


def _snapshot(path: Path) -> str | None:
    """The file as it is before an edit (None: it does not exist yet)."""
    return load_text(path) if path.exists() else None


def _remember(inv: Invocation, path: Path, before: str | None) -> None:
    # Only once the edit succeeded: a failed edit changed nothing, so there is nothing to undo.
    inv.rt.undo.setdefault(path, []).append(before)


def str_replace_editor(inv: Invocation) -> Result:
    command = inv.string("command")
    path = inv.path()
    if not Path(inv.string("path") or "").is_absolute():
        raise ToolInputError(
            f"The path {inv.args.get('path')} is relative; give an absolute path, one that "
            f"starts with `/`, such as {path}."
        )
    guard = inv.rt.can_write(inv.ctx)
    try:
        if command == "view":
            return _view(inv, path)
        if command == "create":
            text = inv.string("file_text")
            if text is None:
                raise ToolInputError("The create command needs the `file_text` parameter.")
            before = _snapshot(path)
            result = write_file(path, text, can_write=guard, must_not_exist=True)
            _remember(inv, path, before)
            inv.rt.file_change(inv.ctx, [(path, "add")])
            return Result(inv.style.written(result))
        if command == "str_replace":
            old = inv.string("old_str")
            if old is None:
                raise ToolInputError("The str_replace command needs the `old_str` parameter.")
            new = inv.string("new_str") or ""
            before = _snapshot(path)
            replaced = replace_in_file(path, Edit(old, new), can_write=guard)
            _remember(inv, path, before)
            inv.rt.file_change(inv.ctx, [(path, "update")])
            last = replaced.first_line + new.count("\n")
            return Result(inv.style.edited_region(path, replaced.after, replaced.first_line, last))
        if command == "insert":
            line = inv.integer("insert_line")
            text = inv.string("new_str")
            if line is None or text is None:
                raise ToolInputError(
                    "The insert command needs both the `insert_line` and `new_str` parameters."
                )
            before = _snapshot(path)
            if text and not text.endswith("\n"):
                text += "\n"
            edited = insert_lines(path, line, text, can_write=guard, base=1)
            _remember(inv, path, before)
            inv.rt.file_change(inv.ctx, [(path, "update")])
            return Result(
                inv.style.edited_region(path, edited.after, edited.first_line, edited.last_line)
            )
        if command == "undo_edit":
            history = inv.rt.undo.get(path)
            if not history:
                raise ToolInputError(f"There is no earlier edit of {path} to undo.")
            previous = history.pop()
            guard_write(guard, path)
            if previous is None:
                remove_file(path, can_write=guard)
                inv.rt.file_change(inv.ctx, [(path, "delete")])
                return Result(f"Undid the last edit to {path}; the file it created is removed.")
            save_text(path, previous, can_write=guard)
            inv.rt.file_change(inv.ctx, [(path, "update")])
            return Result(f"Undid the last edit to {path}.")
    except ToolInputError as exc:
        return Result(inv.style.edit_failed(exc, old=inv.string("old_str") or ""), True)
    raise ToolInputError(
        f"Unknown command {command} for str_replace_editor; use one of: view, create, "
        "str_replace, insert, undo_edit"
    )


def _view(inv: Invocation, path: Path) -> Result:
    if path.is_dir():
        return Result(inv.style.listed(list_directory(path, depth=2, scope=read_scope(inv))))
    window = inv.args.get("view_range")
    offset = limit = None
    if isinstance(window, list) and len(window) == 2:
        first, last = int(window[0]), int(window[1])
        offset = first
        limit = None if last == -1 else max(1, last - first + 1)
    result = read_window(
        path, offset=offset, limit=limit, default_limit=10**9, scope=read_scope(inv)
    )
    inv.rt.files.record_read(path)
    return Result(inv.style.read(result))


def working_tree_diff(cwd: Path) -> str:
    """`git diff` of tracked changes plus new untracked files, without touching the index."""

    from oiexec.output.diff import MAX_FILE_BYTES

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        # Hardened: a command may have planted config in the workspace's git dir. Above the
        # threshold a file is "binary" (one line): a huge file cannot swell the submission.
        big = f"core.bigFileThreshold={MAX_FILE_BYTES}"
        return run_git_text(["-c", "core.quotepath=off", "-c", big, *args], cwd=cwd)

    diff = git("diff", "HEAD", "--").stdout
    for name in git("ls-files", "--others", "--exclude-standard").stdout.splitlines():
        diff += git("diff", "--no-index", "--", "/dev/null", name).stdout
    return diff


def submit(inv: Invocation) -> Result:
    diff = working_tree_diff(inv.ctx.cwd)
    if inv.opts(SubmitOptions).confirm_twice and "submit_reviewed" not in inv.rt.flags:
        inv.rt.flags.add("submit_reviewed")
        return Result(inv.style.submit_review(diff))
    return Result(inv.style.submission(diff), submission=diff)
