"""Directory listings: the entries under a root to a depth, for directory tools and the
working-directory overview of the prompts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from oiexec.core.errors import ToolInputError
from oiexec.sandbox.reader import ReadScope
from oiexec.tools.fs.globbing import glob_match
from oiexec.tools.fs.walk import WalkEntry, walk, walk_root


@dataclass(frozen=True)
class Listing:
    """Entries under `root` up to `depth` levels, breadth first, names sorted per directory;
    `total` counts entries before `limit` cut the list."""

    root: Path
    entries: tuple[WalkEntry, ...]
    total: int

    @property
    def truncated(self) -> bool:
        return self.total > len(self.entries)


def list_directory(
    root: Path,
    *,
    depth: int = 1,
    ignore: Sequence[str] = (),
    respect_gitignore: bool = True,
    include_hidden: bool = False,
    limit: int | None = None,
    scope: ReadScope | None = None,
) -> Listing:
    """List `root`. `ignore` globs drop matching entries (and what is under a dropped
    directory); a glob without `/` is matched against entry names."""
    if not root.exists():
        raise ToolInputError(f"Directory does not exist: {root}", kind="missing", path=root)
    if not root.is_dir():
        raise ToolInputError(
            f"{root} is a file, not a directory; read it instead.",
            kind="not_a_directory",
            path=root,
        )
    walk_root(root, scope)
    if depth < 1:
        raise ToolInputError(f"depth must be at least 1, got {depth}.")
    kept: list[WalkEntry] = []
    dropped: list[str] = []
    for entry in walk(
        root,
        include_hidden=include_hidden,
        respect_gitignore=respect_gitignore,
        max_depth=depth,
        scope=scope,
    ):
        if any(entry.rel.startswith(prefix + "/") for prefix in dropped):
            continue
        if any(glob_match(pattern, entry.rel) for pattern in ignore):
            dropped.append(entry.rel)
            continue
        kept.append(entry)
    shown = kept if limit is None else kept[:limit]
    return Listing(root, tuple(shown), len(kept))
