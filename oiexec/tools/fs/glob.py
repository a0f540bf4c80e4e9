"""Finding files by glob pattern, for every harness's glob tool."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from oiexec.core.errors import ToolInputError
from oiexec.sandbox.reader import ReadScope
from oiexec.tools.fs.globbing import glob_match
from oiexec.tools.fs.walk import walk, walk_root

GlobSort = Literal["mtime_desc", "mtime_asc", "path", "recent_first"]
#: `recent_first` (Gemini CLI and Qwen Code): files changed within this many seconds come
#: first, newest first; older ones follow by path.
RECENT_S = 24 * 3600


@dataclass(frozen=True)
class GlobResult:
    """Matching paths (absolute), already sorted and cut to the limit; `total` before the cut."""

    root: Path
    paths: tuple[Path, ...]
    total: int

    @property
    def truncated(self) -> bool:
        return self.total > len(self.paths)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def glob_files(
    root: Path,
    pattern: str,
    *,
    limit: int | None = 100,
    sort: GlobSort = "mtime_desc",
    include_dirs: bool = False,
    include_hidden: bool = False,
    respect_gitignore: bool = True,
    basename_anywhere: bool = True,
    scope: ReadScope | None = None,
) -> GlobResult:
    """Paths under `root` matching `pattern` (see `globbing.glob_match`).

    An absolute pattern inside `root` is made relative to it. Ties in mtime sort by path so
    results are stable.
    """
    if not root.exists():
        raise ToolInputError(f"Directory does not exist: {root}", kind="missing", path=root)
    if not root.is_dir():
        raise ToolInputError(f"{root} is not a directory.", kind="not_a_directory", path=root)
    walk_root(root, scope)
    if not pattern:
        raise ToolInputError("pattern must not be empty.")
    if os.path.isabs(pattern):
        try:
            pattern = Path(pattern).relative_to(root).as_posix()
        except ValueError:
            raise ToolInputError(
                f"The absolute pattern {pattern} is outside {root}; pass a relative pattern "
                "and set the search directory instead."
            ) from None
    hits = [
        entry.path
        for entry in walk(
            root, include_hidden=include_hidden, respect_gitignore=respect_gitignore, scope=scope
        )
        if (include_dirs or not entry.is_dir)
        and glob_match(pattern, entry.rel, basename_anywhere=basename_anywhere)
    ]
    if sort == "path":
        hits.sort()
    elif sort == "recent_first":
        cutoff = time.time() - RECENT_S
        recent = sorted(
            (p for p in hits if _mtime(p) >= cutoff), key=lambda p: (-_mtime(p), str(p))
        )
        hits = recent + sorted(p for p in hits if _mtime(p) < cutoff)
    else:
        hits.sort(
            key=lambda p: (-_mtime(p), str(p)) if sort == "mtime_desc" else (_mtime(p), str(p))
        )
    shown = hits if limit is None else hits[:limit]
    return GlobResult(root, tuple(shown), len(hits))
