"""Windowed reads of text files: which lines, numbered how, cut where.

Every harness reads the same way and differs only in parameters: the base of `offset` (0 or
1), whether a negative offset counts from the end, the window size and the line, byte and
file-size caps.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from oiexec.core.errors import ToolInputError
from oiexec.sandbox.reader import ReadScope
from oiexec.tools.fs._text import is_binary, read_bytes, split_lines

StopReason = Literal["eof", "limit", "max_lines", "max_bytes"]


@dataclass(frozen=True)
class ReadResult:
    """One window of a text file.

    `lines` hold the window's lines without endings, long ones already cut; `start_line` is
    the 1-based number of the first line whatever base the caller used. An offset past the
    end gives no lines and `past_end=True`. `max_lines`/`max_bytes` are the caps the read ran
    with, so a result can name the one it stopped at.
    """

    path: Path
    lines: tuple[str, ...]
    start_line: int
    total_lines: int
    stopped_by: StopReason
    truncated_lines: tuple[int, ...] = ()
    past_end: bool = False
    crlf: bool = False
    size_bytes: int = 0
    max_lines: int | None = None
    max_bytes: int | None = None
    #: The file ends with a line break (some products show the empty line after it).
    final_newline: bool = False

    @property
    def end_line(self) -> int:
        """1-based number of the last line shown (start_line - 1 when none)."""
        return self.start_line + len(self.lines) - 1

    @property
    def is_complete(self) -> bool:
        """Whether the window holds the whole file."""
        return self.start_line == 1 and len(self.lines) == self.total_lines

    @property
    def is_empty_file(self) -> bool:
        return self.total_lines == 0


def read_window(
    path: Path,
    *,
    offset: int | None = None,
    limit: int | None = None,
    base: Literal[0, 1] = 1,
    default_limit: int = 2000,
    max_lines: int | None = None,
    max_line_chars: int | None = 2000,
    line_cut_suffix: str = "",
    max_bytes: int | None = None,
    max_file_bytes: int | None = None,
    max_tail: int | None = None,
    scope: ReadScope | None = None,
) -> ReadResult:
    """Read a window of `path`.

    `offset` counts from `base`; below `base` (e.g. 0 with base 1) it means the start. A
    negative offset counts from the end (-1 = last line) and needs `max_tail` to allow it.
    `limit` (default `default_limit`) is capped by `max_lines`. Lines longer than
    `max_line_chars` are cut and `line_cut_suffix` appended. `max_bytes` caps the UTF-8 size
    of the window (a line and its newline count in full; the first line is always given).
    `max_file_bytes` refuses whole-file reads of bigger files. The file is read through the
    runner's one reader (`oiexec.sandbox.reader`) within `scope`, so never more than its cap.
    """
    text, size = _load(path, scope)
    if limit is not None and limit <= 0:
        raise ToolInputError(f"limit must be a positive number of lines, got {limit}.")
    if max_file_bytes is not None and offset is None and limit is None and size > max_file_bytes:
        raise ToolInputError(
            f"{path} is {size} bytes, more than the {max_file_bytes} bytes a whole read may "
            "return; read it in parts with offset and limit, or search it with grep.",
            kind="invalid",
            path=path,
        )
    all_lines = split_lines(text)
    total = len(all_lines)
    first = _first_index(offset, base, total, max_tail)
    requested = default_limit if limit is None else limit
    want = requested if max_lines is None else min(requested, max_lines)
    if first > 0 and first >= total:
        return ReadResult(path, (), first + 1, total, "eof", past_end=True, size_bytes=size)
    shown, cut, stopped = _window(
        all_lines, first, want, want < requested, max_line_chars, line_cut_suffix, max_bytes
    )
    return ReadResult(
        path,
        tuple(shown),
        first + 1,
        total,
        stopped,
        tuple(cut),
        crlf="\r\n" in text,
        size_bytes=size,
        max_lines=max_lines,
        max_bytes=max_bytes,
        final_newline=text.endswith("\n"),
    )


def _load(path: Path, scope: ReadScope | None) -> tuple[str, int]:
    data = read_bytes(path, scope)
    if is_binary(data):
        raise ToolInputError(
            f"{path} appears to be a binary file and cannot be read as text.",
            kind="binary",
            path=path,
        )
    return data.decode("utf-8", errors="replace"), len(data)


def _first_index(offset: int | None, base: int, total: int, max_tail: int | None) -> int:
    if offset is None:
        return 0
    if offset < 0:
        if max_tail is None:
            raise ToolInputError(f"offset must not be negative, got {offset}.")
        if -offset > max_tail:
            raise ToolInputError(
                f"A negative offset reads from the end of the file and may go back at most "
                f"{max_tail} lines; got {offset}."
            )
        return max(0, total + offset)
    return max(0, offset - base)


def _window(
    all_lines: list[str],
    first: int,
    want: int,
    capped: bool,
    max_line_chars: int | None,
    suffix: str,
    max_bytes: int | None,
) -> tuple[list[str], list[int], StopReason]:
    shown: list[str] = []
    cut: list[int] = []
    used = 0
    for index in range(first, len(all_lines)):
        if len(shown) >= want:
            return shown, cut, "max_lines" if capped else "limit"
        line = all_lines[index]
        if max_line_chars is not None and len(line) > max_line_chars:
            line = line[:max_line_chars] + suffix
            cut.append(index + 1)
        cost = len(line.encode("utf-8")) + 1
        if max_bytes is not None and shown and used + cost > max_bytes:
            return shown, cut, "max_bytes"
        used += cost
        shown.append(line)
    return shown, cut, "eof"
