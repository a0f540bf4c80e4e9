"""Planning a parsed patch against the files, then committing it through the writer.

`plan` walks the patch's file sections in order and computes the end state of every file it
touches (keyed by real path, so two sections for one file, or an add then an update, see each
other's result), after the writer has cleared every path with the sandbox policy. Nothing is
written until every section fits; `commit` then writes them all, or puts back the ones
already written (`FileWriter.commit`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from oiexec.sandbox.writer import CommitFailed, FileWriter, PathChanged, WriteDenied
from oiexec.tools.apply_patch.match import Rules
from oiexec.tools.apply_patch.model import (
    NOTHING_WRITTEN,
    AddFile,
    ApplyPatchError,
    ChangeKind,
    DeleteFile,
    FileChange,
    Patch,
    PatchResult,
    UpdateFile,
)
from oiexec.tools.apply_patch.text import patch_text


def absolute(cwd: Path, path: str) -> Path:
    """`path` (as the patch names it) made absolute against `cwd` and normalised."""
    candidate = Path(path).expanduser()
    return Path(os.path.normpath(candidate if candidate.is_absolute() else cwd / candidate))


def _io_error(real: Path, exc: OSError, note: str) -> ApplyPatchError:
    if isinstance(exc, PathChanged | WriteDenied):
        reason = str(exc)
    else:
        reason = f"cannot write {real}: {exc.strerror or exc}"
    return ApplyPatchError(f"apply_patch failed: {reason}\n{note}", kind="io", path=str(real))


def _decode(data: bytes) -> str:
    # surrogateescape: bytes that are not UTF-8 survive the round trip untouched.
    return data.decode("utf-8", errors="surrogateescape")


@dataclass
class Plan:
    """The verified end state of every file a patch touches, keyed by real path (None: the
    file goes), and what to report."""

    cwd: Path
    writer: FileWriter
    rules: Rules
    states: dict[Path, bytes | None] = field(default_factory=dict)
    changes: list[FileChange] = field(default_factory=list)
    #: The paths as the patch names them, for Codex's summary.
    shown: dict[ChangeKind, list[str]] = field(
        default_factory=lambda: {"add": [], "update": [], "delete": []}
    )

    def _check(self, path: Path, shown: str, action: str, *, remove: bool = False) -> Path:
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
            raise ApplyPatchError.verify(shown, f"cannot {action} {shown}: it is a directory")
        return real

    def _read(self, real: Path, shown: str) -> bytes | None:
        if real in self.states:
            return self.states[real]
        try:
            return self.writer.read(real)
        except (PathChanged, WriteDenied) as exc:
            raise _io_error(real, exc, NOTHING_WRITTEN) from exc
        except OSError as exc:
            raise ApplyPatchError.verify(shown, f"cannot read {shown}: {exc.strerror}") from exc

    def _text(self, real: Path, shown: str, action: str) -> str:
        data = self._read(real, shown)
        if data is None:
            raise ApplyPatchError.verify(shown, f"cannot {action} {shown}: no such file")
        return _decode(data)

    def _record(self, change: FileChange, shown: str) -> None:
        self.changes.append(change)
        self.shown[change.kind].append(shown)

    def add(self, hunk: AddFile) -> None:
        path = absolute(self.cwd, hunk.path)
        real = self._check(path, hunk.path, "add")
        self.states[real] = hunk.content.encode("utf-8", errors="surrogateescape")
        self._record(FileChange(path, "add"), hunk.path)

    def delete(self, hunk: DeleteFile) -> None:
        path = absolute(self.cwd, hunk.path)
        link = self._check(path, hunk.path, "delete", remove=True)
        gone = self.states[link] is None if link in self.states else not os.path.lexists(link)
        if gone:
            raise ApplyPatchError.verify(hunk.path, f"cannot delete {hunk.path}: no such file")
        if hunk.chunks:  # a unified diff's deletion must still match what the file holds
            real = self._check(path, hunk.path, "delete")
            patch_text(self._text(real, hunk.path, "delete"), hunk.chunks, self.rules, hunk.path)
        self.states[link] = None
        self._record(FileChange(path, "delete"), hunk.path)

    def update(self, hunk: UpdateFile) -> None:
        path = absolute(self.cwd, hunk.path)
        real = self._check(path, hunk.path, "update" if hunk.move_to is None else "move")
        if hunk.create:
            if self._read(real, hunk.path):
                raise ApplyPatchError(
                    f"The diff creates {hunk.path}, but that file already exists.",
                    kind="exists",
                    path=hunk.path,
                )
            before = ""
        else:
            before = self._text(real, hunk.path, "update")
        after, _ = patch_text(before, hunk.chunks, self.rules, hunk.path)
        data = after.encode("utf-8", errors="surrogateescape")
        kind: ChangeKind = "add" if hunk.create else "update"
        if hunk.move_to is None:
            self.states[real] = data
            self._record(FileChange(path, kind), hunk.path)
            return
        dest = absolute(self.cwd, hunk.move_to)
        dest_real = self._check(dest, hunk.move_to, "move a file to")
        if dest_real != real:
            # The source goes: the link itself if it is one, as a Delete File would take it.
            self.states[self._check(path, hunk.path, "move", remove=True)] = None
        self.states[dest_real] = data
        self._record(FileChange(path, kind, dest), hunk.move_to)


def plan_changes(patch: Patch, cwd: Path) -> list[FileChange]:
    """The changes a patch names, without reading any file (for an in-progress item)."""
    changes: list[FileChange] = []
    for hunk in patch.hunks:
        path = absolute(cwd, hunk.path)
        if isinstance(hunk, AddFile):
            changes.append(FileChange(path, "add"))
        elif isinstance(hunk, DeleteFile):
            changes.append(FileChange(path, "delete"))
        else:
            move = absolute(cwd, hunk.move_to) if hunk.move_to is not None else None
            changes.append(FileChange(path, "add" if hunk.create else "update", move))
    return changes


def _summary(shown: dict[ChangeKind, list[str]]) -> str:
    marks: tuple[tuple[str, ChangeKind], ...] = (("A", "add"), ("M", "update"), ("D", "delete"))
    lines = ["Success. Updated the following files:"]
    for mark, kind in marks:
        lines.extend(f"{mark} {p}" for p in dict.fromkeys(shown[kind]))
    return "\n".join(lines) + "\n"


def apply(patch: Patch, cwd: Path, writer: FileWriter, rules: Rules) -> PatchResult:
    """Plan every section of `patch` (matching chunks by `rules`), then commit them all;
    raises `ApplyPatchError`, in which case no file was changed."""
    plan = Plan(Path(cwd), writer, rules)
    for hunk in patch.hunks:
        if isinstance(hunk, AddFile):
            plan.add(hunk)
        elif isinstance(hunk, DeleteFile):
            plan.delete(hunk)
        else:
            plan.update(hunk)
    try:
        writer.commit(plan.states)
    except CommitFailed as failed:
        if failed.verb == "read":
            raise ApplyPatchError(
                f"apply_patch failed: cannot read {failed.target}: "
                f"{failed.cause.strerror or failed.cause}\n{NOTHING_WRITTEN}",
                kind="io",
                path=str(failed.target),
            ) from failed
        note = NOTHING_WRITTEN if failed.restored else "Some files could not be restored."
        raise _io_error(failed.target, failed.cause, note) from failed
    return PatchResult(
        changes=tuple(plan.changes),
        summary=_summary(plan.shown),
        added=tuple(plan.shown["add"]),
        modified=tuple(plan.shown["update"]),
        deleted=tuple(plan.shown["delete"]),
    )
