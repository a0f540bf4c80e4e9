"""Apply a `*** Begin Patch` patch (see `patch_format.py`) all-or-nothing.

The applier runs in the runner process, not in the sandbox, so every path it would write or
delete is first judged by a writer (the runner passes a `PolicyWriter` for its policy, which
also does the IO without following symlinks, so a command racing the patch cannot redirect
it). Every hunk is verified against the files before the first byte is written; if a write
still fails, the files already written are restored.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from oiexec.sandbox.writer import FileWriter, PathChanged, WriteDenied, as_writer
from oiexec.tools.patch_format import (
    NOTHING_WRITTEN,
    AddFile,
    ApplyPatchError,
    ChangeKind,
    Chunk,
    DeleteFile,
    ErrorKind,
    FileChange,
    HeredocInvocation,
    Hunk,
    LineOp,
    Patch,
    PatchResult,
    UpdateFile,
    extract_heredoc_patch,
    parse_heredoc_invocation,
    parse_patch,
    render_patch,
)

__all__ = [
    "AddFile",
    "ApplyPatchError",
    "CanWrite",
    "ChangeKind",
    "Chunk",
    "DeleteFile",
    "ErrorKind",
    "FileChange",
    "HeredocInvocation",
    "Hunk",
    "Patch",
    "PatchResult",
    "UpdateFile",
    "apply_parsed_patch",
    "apply_patch",
    "extract_heredoc_patch",
    "parse_heredoc_invocation",
    "parse_patch",
    "plan_changes",
    "render_patch",
]

#: Returns why writing a path is not allowed, or None when it is; a `FileWriter` also does
#: the IO (a bare callback gets direct IO).
CanWrite = Callable[[Path], str | None] | FileWriter


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
        f"apply_patch verification failed: {message}\n{NOTHING_WRITTEN}", kind="verify", path=path
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
            raise _io_error(path, exc, NOTHING_WRITTEN) from exc
        if reason is not None:
            raise ApplyPatchError(
                f"apply_patch rejected: cannot {action} {shown}: {reason}\n{NOTHING_WRITTEN}",
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
                f"apply_patch failed: cannot read {real}: {exc.strerror}\n{NOTHING_WRITTEN}",
                kind="io",
                path=str(real),
            ) from exc
    done: list[Path] = []
    for real, data in states.items():
        try:
            _write(writer, real, data)
        except OSError as exc:
            restored = _rollback(writer, done, originals)
            note = NOTHING_WRITTEN if restored else "Some files could not be restored."
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
