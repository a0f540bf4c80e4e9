"""Resolving a path's symbolic links one component at a time, seeing each link on the way.

`os.path.realpath` says where a path ends up; the runner's checks also need the links it
passed through, since a link lying in a root commands can write may be re-pointed after the
check (guards restore such links; a program reached through one is refused).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["resolve"]

_MAX_LINKS = 40  # as the kernel's MAXSYMLINKS


def resolve(path: Path) -> tuple[Path, list[tuple[Path, str]], bool]:
    """`path` with every symlink resolved, the links met (path, target), and whether the
    resolution ended early (a loop, or a non-directory in the middle)."""
    links: list[tuple[Path, str]] = []
    pending = list(path.parts[1:])
    current = Path("/")
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            current = current.parent
            continue
        candidate = current / part
        try:
            info = os.lstat(candidate)
        except OSError:
            return Path(current, part, *pending), links, False
        if stat.S_ISLNK(info.st_mode):
            if len(links) >= _MAX_LINKS:
                return Path(candidate, *pending), links, True
            target = os.readlink(candidate)
            links.append((candidate, target))
            target_parts = Path(target).parts
            if target.startswith("/"):
                current = Path("/")
                target_parts = target_parts[1:]
            pending[:0] = list(target_parts)
            continue
        if pending and not stat.S_ISDIR(info.st_mode):
            return Path(candidate, *pending), links, True
        current = candidate
    return current, links, False
