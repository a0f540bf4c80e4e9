"""Creating and overwriting whole files (Claude Code Write, kimi WriteFile, SWE `create`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from oiexec.core.errors import ToolInputError
from oiexec.sandbox.writer import WriteGuard
from oiexec.tools.fs._text import guard_write, load_text, save_text

WriteMode = Literal["overwrite", "append"]


@dataclass(frozen=True)
class WriteResult:
    """What a write did; `before` is None when the file was created."""

    path: Path
    before: str | None
    after: str

    @property
    def created(self) -> bool:
        return self.before is None

    @property
    def bytes_written(self) -> int:
        return len(self.after.encode("utf-8"))


def write_file(
    path: Path,
    content: str,
    *,
    can_write: WriteGuard,
    mode: WriteMode = "overwrite",
    must_not_exist: bool = False,
    create_parents: bool = True,
) -> WriteResult:
    """Write `content` to `path` exactly as given (no newline added or translated).

    `append` adds to the end without a separator, as kimi's WriteFile does.
    `must_not_exist` refuses an existing file (SWE-agent `create`).
    """
    if path.is_dir():
        raise ToolInputError(
            f"{path} is a directory; give the path of a file to write.",
            kind="is_directory",
            path=path,
        )
    exists = path.exists()
    if exists and must_not_exist:
        raise ToolInputError(
            f"File already exists at {path}; it cannot be created again. "
            "Edit it instead, or choose another path.",
            kind="exists",
            path=path,
        )
    if not create_parents and not path.parent.is_dir():
        raise ToolInputError(
            f"Parent directory {path.parent} does not exist.", kind="missing", path=path
        )
    guard_write(can_write, path)
    before = load_text(path) if exists else None
    after = (before or "") + content if mode == "append" else content
    save_text(path, after, can_write=can_write)
    return WriteResult(path, before, after)
