"""Mount points bwrap has to create on the host for protected names that do not exist.

Mounting a read-only tmpfs over a missing `.openinterpreter` makes bwrap `mkdir` it in the
(bound) host directory. We remove that empty directory once the last command using it ends,
so nothing is left behind. A refcount keeps one command's cleanup from unmounting (Linux
detaches mounts whose mount point is removed) the guard of another command still running.
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
