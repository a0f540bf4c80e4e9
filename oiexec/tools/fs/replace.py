"""Exact-string replacement: the Edit primitive of Claude Code, kimi, qwen-code, opencode and
SWE-agent's `str_replace`. Literal text, never a regex; one unique match unless `replace_all`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from oiexec.core.errors import ToolInputError
from oiexec.sandbox.writer import WriteGuard
from oiexec.tools.fs._text import guard_write, load_text, save_text, uses_crlf


@dataclass(frozen=True)
class Edit:
    """One replacement: `old` -> `new`, every occurrence when `replace_all`."""

    old: str
    new: str
    replace_all: bool = False


@dataclass(frozen=True)
class ReplaceResult:
    """A file before and after its edits; `replacements` counts every occurrence replaced;
    `first_line` is the 1-based line where the first edit landed (for snippets)."""

    path: Path
    before: str
    after: str
    replacements: int
    first_line: int

    @property
    def created(self) -> bool:
        return self.before == "" and self.replacements == 0


def occurrence_lines(content: str, old: str) -> tuple[int, ...]:
    """1-based line numbers where each (non-overlapping) occurrence of `old` starts."""
    lines: list[int] = []
    start = content.find(old)
    while start >= 0 and old:
        lines.append(content.count("\n", 0, start) + 1)
        start = content.find(old, start + len(old))
    return tuple(lines)


def replace_text(content: str, edit: Edit, *, path: Path | None = None) -> tuple[str, int]:
    """`content` with `edit` applied and the number of occurrences replaced.

    Same result as `str.replace` (first occurrence only when not `replace_all`, which then
    requires it to be the only one). Raises `ToolInputError` for an empty or absent
    `old`, a no-op edit, or an ambiguous match.
    """
    where = f" in {path}" if path is not None else ""
    if edit.old == edit.new:
        raise ToolInputError(
            "old_string and new_string are identical, so there is nothing to change.",
            kind="no_change",
            path=path,
        )
    if not edit.old:
        raise ToolInputError("old_string must not be empty.", kind="invalid", path=path)
    count = content.count(edit.old)
    if count == 0:
        raise ToolInputError(
            f"old_string was not found{where}. Re-read the file and copy the text exactly, "
            "including whitespace and indentation.",
            kind="not_found",
            path=path,
            count=0,
        )
    if count > 1 and not edit.replace_all:
        raise ToolInputError(
            f"Found {count} occurrences of old_string{where}; add surrounding context to make "
            "it unique, or set replace_all to replace every occurrence.",
            kind="ambiguous",
            path=path,
            count=count,
            lines=occurrence_lines(content, edit.old),
        )
    return content.replace(edit.old, edit.new), count


def apply_edits(
    content: str, edits: Sequence[Edit], *, path: Path | None = None
) -> tuple[str, int, int]:
    """Apply `edits` in order, each to the result of the previous; all or nothing.
    Returns the text, the occurrences replaced and the first line touched."""
    if not edits:
        raise ToolInputError("No edits were given.", kind="invalid", path=path)
    total = 0
    first_line = 0
    for edit in edits:
        if not first_line:
            first_line = content.count("\n", 0, max(0, content.find(edit.old))) + 1
        content, count = replace_text(content, edit, path=path)
        total += count
    return content, total, first_line


def replace_in_file(
    path: Path,
    edits: Edit | Sequence[Edit],
    *,
    can_write: WriteGuard,
    create_if_empty_old: bool = False,
) -> ReplaceResult:
    """Edit `path` in place. Nothing is written unless every edit succeeds.

    A CRLF file is edited in LF space (so a model's LF `old_string` matches) and written back
    with CRLF. With `create_if_empty_old`, an empty `old` on a missing file creates it with
    `new` (Claude Code and qwen-code allow that).
    """
    batch = [edits] if isinstance(edits, Edit) else list(edits)
    if create_if_empty_old and len(batch) == 1 and not batch[0].old and not path.exists():
        save_text(path, batch[0].new, can_write=can_write)
        return ReplaceResult(path, "", batch[0].new, 0, 1)
    # Judged before reading: an edit's errors quote the file, so a path the writer refuses
    # (a link out of the writable roots, a denied file) is never read for it.
    guard_write(can_write, path)
    before = load_text(path)
    crlf = uses_crlf(before)
    work = before.replace("\r\n", "\n") if crlf else before
    if crlf:
        batch = [Edit(_lf(e.old), _lf(e.new), e.replace_all) for e in batch]
    after, count, first_line = apply_edits(work, batch, path=path)
    if crlf:
        after = after.replace("\n", "\r\n")
    save_text(path, after, can_write=can_write)
    return ReplaceResult(path, before, after, count, first_line)


def _lf(text: str) -> str:
    return text.replace("\r\n", "\n")
