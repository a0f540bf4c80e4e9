"""Codex's `*** Begin Patch` language: parsing it into the change model, rendering it back,
and how its chunks are matched and their misses explained.

    *** Begin Patch
    *** Update File: src/app.py
    *** Move to: src/main.py          (optional)
    @@ def main():                    (a chunk; the text after @@ is an anchor line)
     context
    -removed
    +added
    *** End of File                   (optional: the chunk ends the file)
    *** Add File: new.txt
    +every line prefixed with +
    *** Delete File: old.txt
    *** End Patch
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from oiexec.sandbox.writer import WriteGuard, as_writer
from oiexec.tools.apply_patch.match import LADDER, Miss, Rules, fold, seek
from oiexec.tools.apply_patch.model import (
    NOTHING_WRITTEN,
    AddFile,
    ApplyPatchError,
    Chunk,
    DeleteFile,
    Hunk,
    LineOp,
    Patch,
    PatchResult,
    UpdateFile,
)
from oiexec.tools.apply_patch.plan import apply

BEGIN_PATCH = "*** Begin Patch"
END_PATCH = "*** End Patch"
ADD_FILE = "*** Add File:"
DELETE_FILE = "*** Delete File:"
UPDATE_FILE = "*** Update File:"
MOVE_TO = "*** Move to:"
END_OF_FILE = "*** End of File"

_FILE_HEADERS = (ADD_FILE, DELETE_FILE, UPDATE_FILE)
_VALID_HEADERS = "'*** Add File: <path>', '*** Delete File: <path>', '*** Update File: <path>'"

_HEREDOC_OPEN = re.compile(
    r"^(?:(?:apply_patch|applypatch)\s+)?<<(-?)\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2$"
)
# Models trained on unified diffs sometimes write `@@ -12,7 +12,8 @@ def f():`.
_UNIFIED_RANGE = re.compile(r"^-\d+(?:,\d+)?\s+\+\d+(?:,\d+)?\s*@@\s?(.*)$")


def _parse_error(lineno: int | None, message: str) -> ApplyPatchError:
    where = f"Invalid patch hunk on line {lineno}" if lineno is not None else "Invalid patch"
    return ApplyPatchError(f"{where}: {message}\n{NOTHING_WRITTEN}", kind="parse")


def _is_blank(line: str) -> bool:
    return not line.strip()


def _envelope(text: str) -> list[tuple[int, str]]:
    """The numbered lines between `*** Begin Patch` and `*** End Patch`, with heredoc or
    code-fence wrappers and surrounding blank lines removed."""
    numbered = [(n, line.removesuffix("\r")) for n, line in enumerate(text.split("\n"), 1)]

    def trim(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
        start, end = 0, len(lines)
        while start < end and _is_blank(lines[start][1]):
            start += 1
        while end > start and _is_blank(lines[end - 1][1]):
            end -= 1
        return lines[start:end]

    lines = trim(numbered)
    if len(lines) >= 2:
        first, last = lines[0][1].strip(), lines[-1][1].strip()
        opener = _HEREDOC_OPEN.match(first)
        heredoc = opener is not None and last == opener.group(3)
        fenced = first.startswith("```") and last == "```"
        if heredoc or fenced:
            lines = trim(lines[1:-1])
    if not lines or lines[0][1].strip() != BEGIN_PATCH:
        raise _parse_error(None, f"The first line of the patch must be '{BEGIN_PATCH}'")
    if len(lines) < 2 or lines[-1][1].strip() != END_PATCH:
        raise _parse_error(None, f"The last line of the patch must be '{END_PATCH}'")
    return lines[1:-1]


def _header(line: str, marker: str) -> str | None:
    stripped = line.strip()
    return stripped[len(marker) :].strip() if stripped.startswith(marker) else None


class _Parser:
    def __init__(self, lines: list[tuple[int, str]]) -> None:
        self.lines = lines
        self.i = 0

    def at_file_header(self) -> bool:
        if self.i >= len(self.lines):
            return False
        line = self.lines[self.i][1]
        # A line starting with an edit marker is content, whatever follows the marker.
        head = line if line[:1] in " -+" else line.strip()
        return head.startswith(_FILE_HEADERS)

    def parse(self) -> Patch:
        hunks: list[Hunk] = []
        while self.i < len(self.lines):
            lineno, line = self.lines[self.i]
            if _is_blank(line):
                self.i += 1
                continue
            hunks.append(self.hunk(lineno, line))
        if not hunks:
            raise _parse_error(None, "the patch contains no file operations")
        return Patch(tuple(hunks))

    def path(self, lineno: int, value: str, what: str) -> str:
        if not value:
            raise _parse_error(lineno, f"'{what}' needs a file path")
        return value

    def hunk(self, lineno: int, line: str) -> Hunk:
        self.i += 1
        if (value := _header(line, ADD_FILE)) is not None:
            return AddFile(self.path(lineno, value, ADD_FILE), self.add_lines())
        if (value := _header(line, DELETE_FILE)) is not None:
            return DeleteFile(self.path(lineno, value, DELETE_FILE))
        if (value := _header(line, UPDATE_FILE)) is not None:
            return self.update(lineno, self.path(lineno, value, UPDATE_FILE))
        raise _parse_error(
            lineno, f"'{line}' is not a valid hunk header. Valid hunk headers: {_VALID_HEADERS}"
        )

    def add_lines(self) -> tuple[str, ...]:
        content: list[str] = []
        blanks = 0  # bare empty lines count as content only if more `+` lines follow
        while self.i < len(self.lines) and not self.at_file_header():
            lineno, line = self.lines[self.i]
            if line.startswith("+"):
                content.extend([""] * blanks)
                blanks = 0
                content.append(line[1:])
            elif _is_blank(line):
                blanks += 1
            else:
                raise _parse_error(
                    lineno, f"lines of an Add File section must start with '+' (got '{line}')"
                )
            self.i += 1
        return tuple(content)

    def update(self, header_lineno: int, path: str) -> UpdateFile:
        move_to: str | None = None
        if self.i < len(self.lines):
            lineno, line = self.lines[self.i]
            value = None if line[:1] in " -+" else _header(line, MOVE_TO)
            if value is not None:
                move_to = self.path(lineno, value, MOVE_TO)
                self.i += 1
        chunks = self.chunks(path)
        if not chunks and move_to is None:
            raise _parse_error(header_lineno, f"Update File section for '{path}' has no changes")
        return UpdateFile(path, tuple(chunks), move_to)

    def chunks(self, path: str) -> list[Chunk]:
        chunks: list[Chunk] = []
        lines: list[tuple[LineOp, str]] = []
        anchor: str | None = None
        header_lineno: int | None = None  # line of the open chunk's `@@`, if it had one
        is_open = False
        blanks = 0

        def close(end_of_file: bool, lineno: int) -> None:
            nonlocal lines, anchor, header_lineno, is_open, blanks
            if is_open or lines:
                if not lines:
                    at = header_lineno if header_lineno is not None else lineno
                    raise _parse_error(at, f"a chunk of '{path}' has no lines")
                chunks.append(Chunk(tuple(lines), anchor, end_of_file))
            lines, anchor, header_lineno, is_open, blanks = [], None, None, False, 0

        while self.i < len(self.lines) and not self.at_file_header():
            lineno, line = self.lines[self.i]
            self.i += 1
            stripped = line.rstrip()
            if stripped == "@@" or line.startswith("@@ "):
                close(False, lineno)
                is_open, header_lineno = True, lineno
                anchor = _anchor(line)
            elif stripped == END_OF_FILE:
                if not lines:
                    raise _parse_error(lineno, f"'{END_OF_FILE}' must follow changed lines")
                close(True, lineno)
            elif line == "":
                blanks += 1
            elif line[0] in " -+":
                if chunks and not is_open and not lines:
                    raise _parse_error(
                        lineno, f"expected an '@@' line to start the next chunk of '{path}'"
                    )
                lines.extend([(" ", "")] * blanks)
                blanks = 0
                op: LineOp = " " if line[0] == " " else "-" if line[0] == "-" else "+"
                lines.append((op, line[1:]))
            else:
                raise _parse_error(
                    lineno,
                    f"unexpected line in the Update File section for '{path}': '{line}'. Every "
                    "line must start with ' ' (context), '-' (removed) or '+' (added), or be an "
                    "'@@' header",
                )
        # Bare empty lines just before the next header are separators, not context.
        close(False, self.lines[self.i - 1][0] if self.lines else 0)
        return chunks


def _anchor(line: str) -> str | None:
    rest = line[3:] if line.startswith("@@ ") else ""
    unified = _UNIFIED_RANGE.match(rest.strip())
    if unified:
        rest = unified.group(1)
    return rest if rest.strip() else None


def parse_patch(text: str) -> Patch:
    """Parse patch text; raises `ApplyPatchError(kind="parse")` with an `Invalid patch` message."""
    return _Parser(_envelope(text)).parse()


def render_patch(patch: Patch) -> str:
    """The canonical text of `patch`; `parse_patch(render_patch(p)) == p`."""
    out = [BEGIN_PATCH]
    for hunk in patch.hunks:
        if isinstance(hunk, AddFile):
            out.append(f"{ADD_FILE} {hunk.path}")
            out.extend(f"+{line}" for line in hunk.lines)
        elif isinstance(hunk, DeleteFile):
            out.append(f"{DELETE_FILE} {hunk.path}")
        else:
            out.append(f"{UPDATE_FILE} {hunk.path}")
            if hunk.move_to is not None:
                out.append(f"{MOVE_TO} {hunk.move_to}")
            for chunk in hunk.chunks:
                out.append("@@" if chunk.anchor is None else f"@@ {chunk.anchor}")
                out.extend(f"{op}{text}" for op, text in chunk.lines)
                if chunk.end_of_file:
                    out.append(END_OF_FILE)
    out.append(END_PATCH)
    return "\n".join(out) + "\n"


# --- matching ------------------------------------------------------------------------------


def _quote(lines: Iterable[tuple[LineOp, str]]) -> str:
    return "\n".join(f"{op}{text}" for op, text in lines)


def _closest(lines: list[str] | tuple[str, ...], pattern: list[str]) -> str:
    """A hint naming where the expected lines come closest to matching."""
    wanted = [fold(p) for p in pattern]
    best_at, best_len = -1, 0
    for i in range(len(lines)):
        n = 0
        while n < len(wanted) and i + n < len(lines) and fold(lines[i + n]) == wanted[n]:
            n += 1
        if n > best_len:
            best_at, best_len = i, n
    if best_len == 0:
        return "None of these lines' start was found in the file; re-read it before retrying."
    if best_at + best_len >= len(lines):
        return (
            f"The first {best_len} of {len(wanted)} lines match at line {best_at + 1}, "
            "but the file ends there."
        )
    return (
        f"The first {best_len} of {len(wanted)} lines match at line {best_at + 1}; line "
        f"{best_at + best_len + 1} of the file is {lines[best_at + best_len]!r}, expected "
        f"{pattern[best_len]!r}."
    )


def _explain(miss: Miss) -> ApplyPatchError:
    chunk = miss.chunk
    where = f"{miss.path} (chunk {miss.number} of {miss.total})"
    if miss.anchor:
        after = " after the previous chunk" if miss.floor else ""
        return ApplyPatchError.verify(
            miss.path, f"Failed to find context '@@ {chunk.anchor}' in {where}{after}"
        )
    old = chunk.old_lines
    lines = list(miss.lines)
    if miss.floor and seek(lines, old, floor=0, ladder=LADDER, eof=chunk.end_of_file) is not None:
        hint = "They occur only before the previous chunk; chunks must be in file order."
    else:
        hint = _closest(lines, old)
    place = " at the end of the file" if chunk.end_of_file else ""
    expected = _quote((op, t) for op, t in chunk.lines if op != "+")
    return ApplyPatchError.verify(
        miss.path, f"Failed to find expected lines{place} in {where}:\n{expected}\n{hint}"
    )


#: Every comparison, chunks in file order after their anchor, a stray blank line forgiven.
RULES = Rules(ladder=LADDER, explain=_explain, stray_blank=True, context_from_patch=True)


def apply_parsed_patch(patch: Patch, cwd: Path, can_write: WriteGuard | None = None) -> PatchResult:
    """Verify every section of `patch` against the files (and `can_write`, which given a
    `FileWriter` also does the IO), then write them all; raises `ApplyPatchError`, in which
    case no file was changed."""
    return apply(patch, cwd, as_writer(can_write), RULES)


def apply_patch(patch_text: str, cwd: Path, can_write: WriteGuard | None = None) -> PatchResult:
    """Parse and apply `patch_text` relative to `cwd` (see `apply_parsed_patch`)."""
    return apply_parsed_patch(parse_patch(patch_text), cwd, can_write)
