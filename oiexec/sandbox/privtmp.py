"""A private `/tmp` (and `$TMPDIR`) for each bwrap sandbox, i.e. for each run.

Binding the host's `/tmp` made bwrap `mkdir` mount points for missing protected names right
in it: while any command ran, the host had an empty `/tmp/.git`, so every other program
believed all of /tmp was inside a repository. Instead each sandbox owns one host directory
(`oiexec-tmp-*`, mode 0700) whose subdirectories are bound over `/tmp` and `$TMPDIR` inside.
Writes, guard directories and the mount points of workspaces under /tmp all stay in it, they
persist across the commands of one run, and the directory is removed when the sandbox closes,
or, when the runner was killed, when the next run starts (`oiexec.core.rundirs`).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

from oiexec.core import rundirs
from oiexec.core.policy import SandboxPolicy
from oiexec.sandbox.paths import PROTECTED_NAMES

PREFIX = "oiexec-tmp-"


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


@dataclass(frozen=True)
class PrivateRoot:
    """A temp root as the sandbox sees it (`path`) and the private host dir behind it."""

    path: Path
    host: Path
    #: False for a `$TMPDIR` inside a private /tmp: it exists there already, no mount needed.
    bind: bool


def temp_roots(policy: SandboxPolicy) -> list[tuple[Path, bool]]:
    """(real path, nested) of the temp roots that get private dirs instead of the host's.

    Not privatised (left as ordinary bound roots): a temp root that is the workspace or an
    extra root or lies inside one, and a `$TMPDIR` that contains one (hiding what surrounds
    a workspace is only acceptable for /tmp, which is scratch space by convention).
    """
    if policy.mode != "workspace-write":
        return []
    others = [_real(r) for r in (policy.cwd, *policy.extra_roots)]
    candidates: list[tuple[Path, bool]] = []
    if not policy.exclude_slash_tmp:
        candidates.append((Path("/tmp"), True))
    tmpdir = os.environ.get("TMPDIR")
    if tmpdir and not policy.exclude_tmpdir_env_var:
        candidates.append((Path(tmpdir), False))
    found: list[tuple[Path, bool]] = []
    for path, may_enclose in candidates:
        real = _real(path)
        if not real.is_dir() or any(real == p for p, _ in found):
            continue
        if any(_within(real, other) for other in others):
            continue
        if not may_enclose and any(_within(other, real) for other in others):
            continue
        nested = any(_within(real, p) for p, _ in found)
        found.append((real, nested))
    return found


class PrivateTmp:
    """The private temp dirs of one sandbox, made on first use, removed by `close`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._base: Path | None = None
        self._roots: dict[Path, PrivateRoot] = {}

    def roots(self, policy: SandboxPolicy) -> list[PrivateRoot]:
        """Private roots for `policy`, created (with empty guard dirs) when first asked for."""
        wanted = temp_roots(policy)
        if not wanted:
            return []
        with self._lock:
            for real, nested in wanted:
                if real not in self._roots:
                    self._roots[real] = self._make(real, nested)
            return [self._roots[real] for real, _ in wanted]

    def _make(self, real: Path, nested: bool) -> PrivateRoot:
        if self._base is None:
            self._base = rundirs.make(PREFIX)
        if nested:
            parent = next(r for p, r in self._roots.items() if _within(real, p))
            host = parent.host / real.relative_to(parent.path)
            host.mkdir(mode=0o700, parents=True, exist_ok=True)
        else:
            host = self._base / str(len(self._roots))
            host.mkdir()
            # Looks like /tmp to programs inside; the 0700 base keeps it private on the host.
            host.chmod(0o1777)
        for name in PROTECTED_NAMES:
            # Pre-made and bound read-only, so protected names cannot be created here either,
            # and bwrap never has to make a mount point.
            (host / name).mkdir(exist_ok=True)
        return PrivateRoot(path=real, host=host, bind=not nested)

    def close(self) -> None:
        """Remove the private dirs (idempotent), by fd without following links; anything a
        command made unremovable stays inside the 0700 `oiexec-tmp-*` dir."""
        with self._lock:
            base, self._base = self._base, None
            self._roots.clear()
        if base is not None:
            rundirs.remove(base)
