"""The change model both patch grammars parse into, what applying it reports, and its error.

A `Patch` is a sequence of file sections (`AddFile`, `DeleteFile`, `UpdateFile`); an update
is a sequence of `Chunk`s, each a run of context (` `), removed (`-`) and added (`+`) lines
plus what the grammar knew about where it goes (an `@@` anchor line, the end of the file, a
line number).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from oiexec.core.errors import ErrorKind, ToolInputError

NOTHING_WRITTEN = "No files were changed."

LineOp = Literal[" ", "-", "+"]
ChangeKind = Literal["add", "delete", "update"]


class ApplyPatchError(ToolInputError):
    """A patch that cannot be applied; no file was changed. The message is meant for the
    model: it names the file, quotes what did not match and says that nothing was written.
    `kind` is the stage that failed (`parse`, `verify`, `denied`, `io`) or, for unified
    diffs, what the file tools call it (`patch_failed`, `exists`)."""

    def __init__(self, message: str, *, kind: ErrorKind, path: str | None = None) -> None:
        super().__init__(message, kind=kind, path=Path(path) if path is not None else None)

    @classmethod
    def verify(cls, path: str, message: str) -> ApplyPatchError:
        """The patch does not fit the files as they are."""
        return cls(
            f"apply_patch verification failed: {message}\n{NOTHING_WRITTEN}",
            kind="verify",
            path=path,
        )


@dataclass(frozen=True)
class Chunk:
    """One hunk of an update. `anchor` is a line the chunk comes after (`@@ def f():`);
    `end_of_file` pins it to the end; `line` is the 1-based first old line a unified diff
    states (where the search starts). `final_newline` is whether the file ends with a newline
    once the chunk reaches its end (`\\ No newline at end of file`); None keeps the file's."""

    lines: tuple[tuple[LineOp, str], ...]
    anchor: str | None = None
    end_of_file: bool = False
    line: int | None = None
    final_newline: bool | None = None

    @property
    def old_lines(self) -> list[str]:
        return [text for op, text in self.lines if op != "+"]

    @property
    def new_lines(self) -> list[str]:
        return [text for op, text in self.lines if op != "-"]


@dataclass(frozen=True)
class AddFile:
    """A file written with `lines` (each ending in a newline), replacing any file there."""

    path: str
    lines: tuple[str, ...] = ()

    @property
    def content(self) -> str:
        return "".join(f"{line}\n" for line in self.lines)


@dataclass(frozen=True)
class DeleteFile:
    """A file removed; `chunks` (from a unified diff) must still match what it holds."""

    path: str
    chunks: tuple[Chunk, ...] = ()


@dataclass(frozen=True)
class UpdateFile:
    """A file patched by `chunks`, then moved to `move_to` if given. With `create` (a unified
    diff from /dev/null) the file must be missing or empty and is patched from nothing."""

    path: str
    chunks: tuple[Chunk, ...] = ()
    move_to: str | None = None
    create: bool = False


Hunk = AddFile | DeleteFile | UpdateFile


@dataclass(frozen=True)
class Patch:
    hunks: tuple[Hunk, ...]


@dataclass(frozen=True)
class FileChange:
    """One file a patch touches, by absolute path. A move is reported as an update of the
    source path, as Codex's JSONL does, with the destination in `move_path`."""

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
