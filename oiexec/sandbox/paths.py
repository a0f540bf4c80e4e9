"""Path rules shared by every backend and by in-process writers (apply_patch, edit tools).

Tools that write files from the runner process (not through a sandboxed command) must ask
`write_denial` first, so a patch cannot do what a shell command in the same mode could not.
"""

from __future__ import annotations

import os
from pathlib import Path

from oiexec.sandbox.base import SandboxPolicy

#: Names that stay read-only inside every writable root, and cannot be created there.
PROTECTED_NAMES: tuple[str, ...] = (".git", ".openinterpreter", ".agents", ".codex")


def _real(path: Path) -> Path:
    # Resolve through existing symlinks so `ws/link -> /etc` is judged as /etc.
    return Path(os.path.realpath(path))


def _is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def write_denial(policy: SandboxPolicy, path: Path) -> str | None:
    """Why writing `path` is not allowed under `policy`, or None when it is."""
    if policy.mode == "danger-full-access":
        return None
    if policy.mode == "read-only":
        return f"{path}: writes are not allowed in the read-only sandbox"
    target = _real(path)
    for root in (_real(r) for r in policy.writable_roots()):
        if not _is_within(target, root):
            continue
        relative = target.relative_to(root)
        if relative.parts and relative.parts[0] in PROTECTED_NAMES:
            return f"{path}: {relative.parts[0]} is read-only inside the sandbox"
        return None
    return f"{path}: outside the writable roots of the workspace-write sandbox"
