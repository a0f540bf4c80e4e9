"""Codex's `*** Begin Patch` language: its model, parser and renderer, and the recognition of
`apply_patch <<'EOF'` shell commands. Applying a patch to files is `apply_patch.py`."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from oiexec.core.errors import OiexecError

BEGIN_PATCH = "*** Begin Patch"
END_PATCH = "*** End Patch"
ADD_FILE = "*** Add File:"
DELETE_FILE = "*** Delete File:"
UPDATE_FILE = "*** Update File:"
MOVE_TO = "*** Move to:"
END_OF_FILE = "*** End of File"

_FILE_HEADERS = (ADD_FILE, DELETE_FILE, UPDATE_FILE)
_VALID_HEADERS = "'*** Add File: <path>', '*** Delete File: <path>', '*** Update File: <path>'"
NOTHING_WRITTEN = "No files were changed."

ErrorKind = Literal["parse", "verify", "denied", "io"]
ChangeKind = Literal["add", "delete", "update"]


class ApplyPatchError(OiexecError):
    """A patch that cannot be applied. The message is meant for the model: it names the file,
    quotes what did not match and says that nothing was written."""

    def __init__(self, message: str, *, kind: ErrorKind, path: str | None = None) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.path = path


# --- the patch model -----------------------------------------------------------------------

LineOp = Literal[" ", "-", "+"]


@dataclass(frozen=True)
class Chunk:
    """One `@@` section of an Update File: context (` `), removed (`-`) and added (`+`) lines."""

    lines: tuple[tuple[LineOp, str], ...]
    anchor: str | None = None
    end_of_file: bool = False

    @property
    def old_lines(self) -> list[str]:
        return [text for op, text in self.lines if op != "+"]

    @property
    def new_lines(self) -> list[str]:
        return [text for op, text in self.lines if op != "-"]


@dataclass(frozen=True)
class AddFile:
    path: str
    lines: tuple[str, ...] = ()

    @property
    def content(self) -> str:
        return "".join(f"{line}\n" for line in self.lines)


@dataclass(frozen=True)
class DeleteFile:
    path: str


@dataclass(frozen=True)
class UpdateFile:
    path: str
    chunks: tuple[Chunk, ...] = ()
    move_to: str | None = None


Hunk = AddFile | DeleteFile | UpdateFile


@dataclass(frozen=True)
class Patch:
    hunks: tuple[Hunk, ...]


@dataclass(frozen=True)
class FileChange:
    """One file a patch touches. A move is reported as an update of the source path, as
    Codex's JSONL does, with the destination in `move_path`."""

    path: Path
    kind: ChangeKind
    move_path: Path | None = None


@dataclass(frozen=True)
class PatchResult:
    changes: tuple[FileChange, ...]
    #: Codex's `Success. Updated the following files:` block, one `A`/`M`/`D` line per path.
    summary: str
    added: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()


# --- parsing -------------------------------------------------------------------------------

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


# --- shell interception --------------------------------------------------------------------


@dataclass(frozen=True)
class HeredocInvocation:
    """`apply_patch <<'EOF' … EOF` run through the shell, optionally after `cd dir &&`."""

    patch: str
    workdir: str | None = None


_SHELL_HEAD = re.compile(
    r"^\s*(?:cd\s+(?P<dir>'[^']*'|\"[^\"]*\"|[^\s;&|'\"]+)\s*&&\s*)?"
    r"(?:apply_patch|applypatch)\s*<<(?P<dash>-?)\s*(?P<q>['\"]?)"
    r"(?P<delim>[A-Za-z_][A-Za-z0-9_]*)(?P=q)\s*$"
)
_PATCH_COMMANDS = ("apply_patch", "applypatch")


def _unquote(word: str) -> str:
    return shlex.split(word)[0] if word[:1] in "'\"" else word


def parse_heredoc_invocation(command: str) -> HeredocInvocation | None:
    """Recognise a shell command that only runs `apply_patch` on a patch (heredoc or a single
    quoted argument); None for anything else, so the command runs normally."""
    lines = command.split("\n")
    head = _SHELL_HEAD.match(lines[0])
    if head:
        delim, dash = head.group("delim"), bool(head.group("dash"))
        body = [line.lstrip("\t") if dash else line for line in lines[1:]]
        # As in the shell, the first line that is the delimiter ends the document (so a
        # context line ` EOF` does not), and anything after it would be another command.
        end = next((i for i, line in enumerate(body) if line.rstrip() == delim), None)
        if end is None or not all(_is_blank(line) for line in body[end + 1 :]):
            return None
        text = "\n".join(body[:end]) + "\n"
        if BEGIN_PATCH not in text:
            return None
        workdir = head.group("dir")
        return HeredocInvocation(text, _unquote(workdir) if workdir else None)
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    workdir = None
    if len(words) >= 3 and words[0] == "cd" and words[2] == "&&":
        workdir, words = words[1], words[3:]
    if (
        len(words) == 2
        and words[0] in _PATCH_COMMANDS
        and words[1].lstrip().startswith(BEGIN_PATCH)
    ):
        return HeredocInvocation(words[1], workdir)
    return None


def extract_heredoc_patch(command: str) -> str | None:
    """The patch text of an `apply_patch <<'EOF' … EOF` shell command, or None."""
    invocation = parse_heredoc_invocation(command)
    return invocation.patch if invocation else None
