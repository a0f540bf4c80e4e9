"""Line-addressed edits: replace a range of lines (SWE-agent 0.7 `edit S:E`) or insert text
after a line (SWE-agent `str_replace_editor insert`). Line numbers are 1-based by default."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from oiexec.core.errors import ToolInputError
from oiexec.sandbox.writer import WriteGuard
from oiexec.tools.fs._text import (
    guard_write,
    load_text,
    save_text,
    split_keepends,
    uses_crlf,
)


@dataclass(frozen=True)
class LineEditResult:
    """A file before and after; `first_line`/`last_line` bound the new text (1-based)."""

    path: Path
    before: str
    after: str
    first_line: int
    last_line: int


def _as_lines(text: str, eol: str) -> list[str]:
    lines = split_keepends(text)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += eol
    return lines


def replace_lines(content: str, start: int, end: int, text: str, *, base: int = 1) -> str:
    """`content` with lines `start..end` (inclusive, counted from `base`) replaced by `text`.

    `end == start - 1` inserts before `start` without removing anything. Inserted lines get
    the file's line ending when `text` lacks a final one; a file that ended without a newline
    still does when the edit reaches its end.
    """
    lines = split_keepends(content)
    first, last = start - base, end - base
    if first < 0 or first > len(lines) or last < first - 1 or last >= len(lines):
        raise ToolInputError(
            f"Invalid line range {start}-{end}: the file has {len(lines)} lines, so use "
            f"{base} <= start <= end <= {len(lines) - 1 + base} (end = start - 1 inserts).",
            kind="invalid",
        )
    eol = "\r\n" if uses_crlf(content) else "\n"
    new = _as_lines(text, eol)
    tail = lines[last + 1 :]
    if not tail and new and content and not content.endswith("\n"):
        # The edit reaches the end of a file that had no final newline: keep it that way.
        new[-1] = new[-1].rstrip("\r\n") if not text.endswith("\n") else new[-1]
    return "".join(lines[:first] + new + tail)


def insert_after(content: str, line: int, text: str, *, base: int = 1) -> str:
    """`content` with `text` inserted after line `line` (`base - 1` = at the very top)."""
    total = len(split_keepends(content))
    if line < base - 1 or line > total - 1 + base:
        raise ToolInputError(
            f"Invalid insert line {line}: it must be within [{base - 1}, {total - 1 + base}] "
            f"for a file of {total} lines.",
            kind="invalid",
        )
    if line == total - 1 + base and content and not content.endswith("\n"):
        eol = "\r\n" if uses_crlf(content) else "\n"
        content += eol
    return replace_lines(content, line + 1, line, text, base=base)


def edit_lines(
    path: Path,
    start: int,
    end: int,
    text: str,
    *,
    can_write: WriteGuard,
    base: Literal[0, 1] = 1,
) -> LineEditResult:
    """Replace lines `start..end` of `path` with `text` (see `replace_lines`)."""
    guard_write(can_write, path)  # before reading, as `replace_in_file` does
    before = load_text(path)
    try:
        after = replace_lines(before, start, end, text, base=base)
    except ToolInputError as exc:
        raise ToolInputError(exc.message, kind=exc.kind, path=path) from None
    save_text(path, after, can_write=can_write)
    first = start - base + 1
    return LineEditResult(path, before, after, first, first + len(split_keepends(text)) - 1)


def insert_lines(
    path: Path, line: int, text: str, *, can_write: WriteGuard, base: Literal[0, 1] = 1
) -> LineEditResult:
    """Insert `text` after line `line` of `path` (see `insert_after`)."""
    guard_write(can_write, path)  # before reading, as `replace_in_file` does
    before = load_text(path)
    try:
        after = insert_after(before, line, text, base=base)
    except ToolInputError as exc:
        raise ToolInputError(exc.message, kind=exc.kind, path=path) from None
    save_text(path, after, can_write=can_write)
    first = line - base + 2
    return LineEditResult(path, before, after, first, first + len(split_keepends(text)) - 1)
