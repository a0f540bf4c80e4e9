"""Mount points bwrap has to create on the host for protected names that do not exist.

Mounting a read-only tmpfs over a missing `.openinterpreter` in the workspace (or an extra
root) makes bwrap `mkdir` it in the bound host directory. We remove that empty directory once
the last command of this process using it ends. A refcount keeps one command's cleanup from
removing the guard of another still running (Linux detaches a mount whose mount point is
removed). /tmp and $TMPDIR never get such mount points: they are private (privtmp.py).

Trade-off: while a command runs, and after a SIGKILL of the runner, an empty `.git` (etc.)
may exist in the workspace. An empty `.git` is not a repository to git (no HEAD, objects or
refs), and only empty directories are ever removed, never user data.
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from pathlib import Path

_lock = threading.Lock()
_users: Counter[Path] = Counter()


def acquire(paths: list[Path]) -> None:
    with _lock:
        _users.update(paths)


def release(paths: list[Path]) -> None:
    with _lock:
        for path in paths:
            _users[path] -= 1
            if _users[path] > 0:
                continue
            del _users[path]
            # rmdir only removes an empty directory: never user data.
            with contextlib.suppress(OSError):
                if path.is_dir() and not path.is_symlink():
                    path.rmdir()
