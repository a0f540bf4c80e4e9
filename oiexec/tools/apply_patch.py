"""Codex's `*** Begin Patch` language: parse it, render it, and apply it all-or-nothing.

The applier runs in the runner process, not in the sandbox, so every path it would write or
delete is first judged by a writer (the runner passes a `PolicyWriter` for its policy, which
also does the IO without following symlinks, so a command racing the patch cannot redirect
it). Every hunk is verified against the files before the first byte is written; if a write
still fails, the files already written are restored.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from oiexec.errors import OiexecError
from oiexec.sandbox.writer import FileWriter, PathChanged, WriteDenied, as_writer

BEGIN_PATCH = "*** Begin Patch"
END_PATCH = "*** End Patch"
ADD_FILE = "*** Add File:"
DELETE_FILE = "*** Delete File:"
UPDATE_FILE = "*** Update File:"
MOVE_TO = "*** Move to:"
END_OF_FILE = "*** End of File"

_FILE_HEADERS = (ADD_FILE, DELETE_FILE, UPDATE_FILE)
_VALID_HEADERS = "'*** Add File: <path>', '*** Delete File: <path>', '*** Update File: <path>'"
_NOTHING_WRITTEN = "No files were changed."

ErrorKind = Literal["parse", "verify", "denied", "io"]
ChangeKind = Literal["add", "delete", "update"]
#: Returns why writing a path is not allowed, or None when it is; a `FileWriter` also does
#: the IO (a bare callback gets direct IO).
CanWrite = Callable[[Path], str | None] | FileWriter


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
    return ApplyPatchError(f"{where}: {message}\n{_NOTHING_WRITTEN}", kind="parse")


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


# --- matching ------------------------------------------------------------------------------

_FOLD = str.maketrans(
    {
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d", "-"),
        **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033", '"'),
        **dict.fromkeys(
            "\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000", " "
        ),
        **dict.fromkeys("\ufeff\u200b", None),
    }
)


def _fold(line: str) -> str:
    return line.translate(_FOLD).strip()


def _exact(line: str) -> str:
    return line


_PASSES: tuple[Callable[[str], str], ...] = (_exact, str.rstrip, str.strip, _fold)


def _seek(lines: Sequence[str], pattern: Sequence[str], start: int, eof: bool) -> int | None:
    """First index >= start where `pattern` matches, trying ever looser comparisons; with
    `eof` the pattern must end at the last line."""
    last = len(lines) - len(pattern)
    if last < start:
        return None
    candidates = range(last, last + 1) if eof else range(start, last + 1)
    for norm in _PASSES:
        wanted = [norm(p) for p in pattern]
        normalised: dict[int, str] = {}

        def at(
            i: int, norm: Callable[[str], str] = norm, cache: dict[int, str] = normalised
        ) -> str:
            if i not in cache:
                cache[i] = norm(lines[i])
            return cache[i]

        for i in candidates:
            if all(at(i + k) == w for k, w in enumerate(wanted)):
                return i
    return None


def _closest(lines: Sequence[str], pattern: Sequence[str]) -> str:
    """A hint naming where the expected lines come closest to matching."""
    wanted = [_fold(p) for p in pattern]
    best_at, best_len = -1, 0
    for i in range(len(lines)):
        n = 0
        while n < len(wanted) and i + n < len(lines) and _fold(lines[i + n]) == wanted[n]:
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


# --- applying ------------------------------------------------------------------------------


@dataclass
class _Text:
    """File text as lines plus each line's own ending, so CRLF and a missing final newline
    survive an update."""

    lines: list[str]
    endings: list[str]
    final_newline: bool
    eol: str

    @classmethod
    def split(cls, text: str) -> _Text:
        if text == "":
            return cls([], [], True, "\n")
        raw = text.split("\n")
        last = raw.pop()
        lines: list[str] = []
        endings: list[str] = []
        for line in raw:
            crlf = line.endswith("\r")
            lines.append(line[:-1] if crlf else line)
            endings.append("\r\n" if crlf else "\n")
        if last:
            lines.append(last)
            endings.append("")
        crlf_count = endings.count("\r\n")
        eol = "\r\n" if crlf_count > endings.count("\n") else "\n"
        return cls(lines, endings, not last, eol)

    def replace(self, replacements: Iterable[tuple[int, int, list[str]]]) -> str:
        lines, endings = list(self.lines), list(self.endings)
        for start, length, new in sorted(replacements, key=lambda r: r[0], reverse=True):
            lines[start : start + length] = new
            endings[start : start + length] = [self.eol] * len(new)
        if not lines:
            return ""
        endings = [e or self.eol for e in endings]
        endings[-1] = endings[-1] if self.final_newline else ""
        return "".join(line + ending for line, ending in zip(lines, endings, strict=True))


def _quote(lines: Iterable[tuple[LineOp, str]]) -> str:
    return "\n".join(f"{op}{text}" for op, text in lines)


def _update_text(text: str, hunk: UpdateFile) -> str:
    doc = _Text.split(text)
    replacements: list[tuple[int, int, list[str]]] = []
    cursor = 0
    total = len(hunk.chunks)
    for number, chunk in enumerate(hunk.chunks, 1):
        where = f"{hunk.path} (chunk {number} of {total})"
        if chunk.anchor is not None:
            found = _seek(doc.lines, [chunk.anchor], cursor, eof=False)
            if found is None:
                raise _verify_error(
                    hunk.path,
                    f"Failed to find context '@@ {chunk.anchor}' in {where}"
                    + (" after the previous chunk" if cursor else ""),
                )
            cursor = found + 1
        old, new = chunk.old_lines, chunk.new_lines
        if not old:
            at = len(doc.lines) if chunk.anchor is None or chunk.end_of_file else cursor
            replacements.append((at, 0, new))
            continue
        found = _seek(doc.lines, old, cursor, chunk.end_of_file)
        if found is None and len(old) > 1 and old[-1] == "":
            # A trailing empty context line is often a stray blank line in the patch.
            trimmed_new = new[:-1] if new and new[-1] == "" else new
            found = _seek(doc.lines, old[:-1], cursor, chunk.end_of_file)
            if found is not None:
                old, new = old[:-1], trimmed_new
        if found is None:
            expected = [(op, t) for op, t in chunk.lines if op != "+"]
            place = " at the end of the file" if chunk.end_of_file else ""
            if cursor and _seek(doc.lines, old, 0, chunk.end_of_file) is not None:
                hint = "They occur only before the previous chunk; chunks must be in file order."
            else:
                hint = _closest(doc.lines, old)
            raise _verify_error(
                hunk.path,
                f"Failed to find expected lines{place} in {where}:\n{_quote(expected)}\n{hint}",
            )
        replacements.append((found, len(old), new))
        cursor = found + len(old)
    return doc.replace(replacements)


def _verify_error(path: str, message: str) -> ApplyPatchError:
    return ApplyPatchError(
        f"apply_patch verification failed: {message}\n{_NOTHING_WRITTEN}", kind="verify", path=path
    )


def _absolute(cwd: Path, path: str) -> Path:
    candidate = Path(path).expanduser()
    return Path(os.path.normpath(candidate if candidate.is_absolute() else cwd / candidate))


@dataclass
class _Plan:
    """The verified end state of every file the patch touches, keyed by real path."""

    cwd: Path
    writer: FileWriter
    states: dict[Path, bytes | None] = field(default_factory=dict)
    changes: list[FileChange] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)

    def check(self, path: Path, shown: str, action: str, *, remove: bool = False) -> Path:
        """The path to do the IO on, once the policy allows it: writes go through symlinks
        (as the sandbox judges them), removals take the link itself."""
        try:
            real, reason = self.writer.resolve(path, link_itself=remove)
        except PathChanged as exc:
            raise _io_error(path, exc, _NOTHING_WRITTEN) from exc
        if reason is not None:
            raise ApplyPatchError(
                f"apply_patch rejected: cannot {action} {shown}: {reason}\n{_NOTHING_WRITTEN}",
                kind="denied",
                path=shown,
            )
        if path.is_dir():
            raise _verify_error(shown, f"cannot {action} {shown}: it is a directory")
        return real

    def read(self, real: Path, shown: str, action: str) -> str:
        if real in self.states:
            data = self.states[real]
        else:
            try:
                data = real.read_bytes()
            except FileNotFoundError:
                data = None
            except OSError as exc:
                raise _verify_error(shown, f"cannot read {shown}: {exc.strerror}") from exc
        if data is None:
            raise _verify_error(shown, f"cannot {action} {shown}: no such file")
        return data.decode("utf-8", errors="surrogateescape")

    def add(self, hunk: AddFile) -> None:
        path = _absolute(self.cwd, hunk.path)
        real = self.check(path, hunk.path, "add")
        self.states[real] = hunk.content.encode("utf-8", errors="surrogateescape")
        self.changes.append(FileChange(path, "add"))
        self.added.append(hunk.path)

    def delete(self, hunk: DeleteFile) -> None:
        path = _absolute(self.cwd, hunk.path)
        real = self.check(path, hunk.path, "delete", remove=True)
        self.read(real, hunk.path, "delete")
        self.states[real] = None
        self.changes.append(FileChange(path, "delete"))
        self.deleted.append(hunk.path)

    def update(self, hunk: UpdateFile) -> None:
        path = _absolute(self.cwd, hunk.path)
        real = self.check(path, hunk.path, "update" if hunk.move_to is None else "move")
        new_text = _update_text(self.read(real, hunk.path, "update"), hunk)
        data = new_text.encode("utf-8", errors="surrogateescape")
        if hunk.move_to is None:
            self.states[real] = data
            self.changes.append(FileChange(path, "update"))
            self.modified.append(hunk.path)
            return
        dest = _absolute(self.cwd, hunk.move_to)
        dest_real = self.check(dest, hunk.move_to, "move a file to")
        if dest_real != real:
            # The source goes: the link itself if it is one, as a Delete File would take it.
            self.states[self.check(path, hunk.path, "move", remove=True)] = None
        self.states[dest_real] = data
        self.changes.append(FileChange(path, "update", dest))
        self.modified.append(hunk.move_to)


def plan_changes(patch: Patch, cwd: Path) -> list[FileChange]:
    """The changes a patch names, without reading any file (for an in-progress item)."""
    changes: list[FileChange] = []
    for hunk in patch.hunks:
        path = _absolute(cwd, hunk.path)
        if isinstance(hunk, AddFile):
            changes.append(FileChange(path, "add"))
        elif isinstance(hunk, DeleteFile):
            changes.append(FileChange(path, "delete"))
        else:
            move = _absolute(cwd, hunk.move_to) if hunk.move_to is not None else None
            changes.append(FileChange(path, "update", move))
    return changes


def _write(writer: FileWriter, real: Path, data: bytes | None) -> None:
    if data is None:
        if real.exists() or real.is_symlink():
            writer.remove(real)
        return
    # Written in place (not replaced) so permissions, ownership and hard links are kept.
    writer.write(real, data, in_place=True)


def _io_error(real: Path, exc: OSError, note: str) -> ApplyPatchError:
    if isinstance(exc, PathChanged | WriteDenied):
        reason = str(exc)
    else:
        reason = f"cannot write {real}: {exc.strerror or exc}"
    return ApplyPatchError(f"apply_patch failed: {reason}\n{note}", kind="io", path=str(real))


def _commit(writer: FileWriter, states: dict[Path, bytes | None]) -> None:
    originals: dict[Path, bytes | None] = {}
    for real in states:
        try:
            originals[real] = real.read_bytes() if real.is_file() else None
        except OSError as exc:
            raise ApplyPatchError(
                f"apply_patch failed: cannot read {real}: {exc.strerror}\n{_NOTHING_WRITTEN}",
                kind="io",
                path=str(real),
            ) from exc
    done: list[Path] = []
    for real, data in states.items():
        try:
            _write(writer, real, data)
        except OSError as exc:
            restored = _rollback(writer, done, originals)
            note = _NOTHING_WRITTEN if restored else "Some files could not be restored."
            raise _io_error(real, exc, note) from exc
        done.append(real)


def _rollback(writer: FileWriter, done: list[Path], originals: dict[Path, bytes | None]) -> bool:
    ok = True
    for real in reversed(done):
        try:
            _write(writer, real, originals[real])
        except OSError:
            ok = False
    return ok


def _summary(added: list[str], modified: list[str], deleted: list[str]) -> str:
    lines = ["Success. Updated the following files:"]
    for mark, paths in (("A", added), ("M", modified), ("D", deleted)):
        lines.extend(f"{mark} {p}" for p in dict.fromkeys(paths))
    return "\n".join(lines) + "\n"


def apply_parsed_patch(patch: Patch, cwd: Path, can_write: CanWrite | None = None) -> PatchResult:
    """Verify every hunk against the files (and `can_write`), then write them all."""
    writer = as_writer(can_write)
    plan = _Plan(Path(cwd), writer)
    for hunk in patch.hunks:
        if isinstance(hunk, AddFile):
            plan.add(hunk)
        elif isinstance(hunk, DeleteFile):
            plan.delete(hunk)
        else:
            plan.update(hunk)
    _commit(writer, plan.states)
    return PatchResult(
        changes=tuple(plan.changes),
        summary=_summary(plan.added, plan.modified, plan.deleted),
        added=tuple(plan.added),
        modified=tuple(plan.modified),
        deleted=tuple(plan.deleted),
    )


def apply_patch(patch_text: str, cwd: Path, can_write: CanWrite | None = None) -> PatchResult:
    """Parse and apply `patch_text` relative to `cwd`; raises `ApplyPatchError`, in which
    case no file was changed."""
    return apply_parsed_patch(parse_patch(patch_text), cwd, can_write)
