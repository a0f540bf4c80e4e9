"""Path rules shared by every backend and by in-process writers (apply_patch, edit tools).

Tools that write files from the runner process (not through a sandboxed command) must ask
`write_denial` first, so a patch cannot do what a shell command in the same mode could not.
"""

from __future__ import annotations

import os
from pathlib import Path

from oiexec.sandbox import profiles
from oiexec.sandbox.base import SandboxPolicy

#: Names that stay read-only inside every writable root, and cannot be created there
#: (from `sandbox_profiles/policy.toml`).
PROTECTED_NAMES: tuple[str, ...] = profiles.protected_names()


def _real(path: Path) -> Path:
    # Resolve through existing symlinks so `ws/link -> /etc` is judged as /etc.
    return Path(os.path.realpath(path))


def _is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def resolve_gitdirs(git_path: Path) -> list[Path]:
    """The real git directories behind a worktree/submodule `.git` file: its `gitdir:` target
    and that target's `commondir` (where hooks and config live). Empty for a `.git` dir."""
    if git_path.is_symlink() or not git_path.is_file():
        return []
    try:
        first = git_path.read_text(encoding="utf-8", errors="replace").splitlines()[0]
    except (OSError, IndexError):
        return []
    if not first.startswith("gitdir:"):
        return []
    target = Path(first.removeprefix("gitdir:").strip())
    gitdir = _real(target if target.is_absolute() else git_path.parent / target)
    found = [gitdir] if gitdir.is_dir() else []
    common_file = gitdir / "commondir"
    if common_file.is_file():
        common = Path(common_file.read_text(encoding="utf-8").strip())
        common = _real(common if common.is_absolute() else gitdir / common)
        if common.is_dir() and common not in found:
            found.append(common)
    return found


def real_writable_roots(policy: SandboxPolicy) -> list[Path]:
    """Writable roots with symlinks resolved, existing ones only, without duplicates."""
    roots: list[Path] = []
    for root in policy.writable_roots():
        real = _real(root)
        if real.is_dir() and real not in roots:
            roots.append(real)
    return roots


def protected_gitdirs(policy: SandboxPolicy) -> list[Path]:
    """Git dirs reached through `.git` files (or symlinks) in the writable roots."""
    found: list[Path] = []
    for root in real_writable_roots(policy):
        git = root / ".git"
        extra = [_real(git)] if git.is_symlink() else resolve_gitdirs(git)
        found += [p for p in extra if p not in found]
    return found


def write_denial(policy: SandboxPolicy, path: Path) -> str | None:
    """Why writing `path` is not allowed under `policy`, or None when it is."""
    if policy.mode == "danger-full-access":
        return None
    if policy.mode == "read-only":
        return f"{path}: writes are not allowed in the read-only sandbox"
    target = _real(path)
    for gitdir in protected_gitdirs(policy):
        if _is_within(target, gitdir):
            return f"{path}: the git directory is read-only inside the sandbox"
    for root in (_real(r) for r in policy.writable_roots()):
        if not _is_within(target, root):
            continue
        relative = target.relative_to(root)
        if relative.parts and relative.parts[0] in PROTECTED_NAMES:
            return f"{path}: {relative.parts[0]} is read-only inside the sandbox"
        return None
    return f"{path}: outside the writable roots of the workspace-write sandbox"
