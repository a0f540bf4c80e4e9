"""Path rules shared by every backend and by in-process writers (apply_patch, edit tools).

Tools that write files from the runner process (not through a sandboxed command) must ask
`write_denial` first, so a patch cannot do what a shell command in the same mode could not.
"""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path

from oiexec.core.policy import SandboxPolicy
from oiexec.sandbox import profiles

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


#: Unicode Default_Ignorable_Code_Point ranges: HFS+ and APFS skip some of these when they
#: compare names, so `.g\u200dit` may open `.git` there.
_IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f"
    "\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
#: An 8.3 short name as NTFS generates them (`GIT~1` for `.git`).
_SHORT_NAME = re.compile(r"(?P<stem>[^~]{1,6})~[1-9][0-9]*")


def _fold_name(name: str) -> str:
    """`name` as a case-insensitive, normalising file system compares it: without ignorable
    code points, one Unicode normal form, case folded, without the NTFS alternate data stream
    suffix (`.git::$INDEX_ALLOCATION`) and trailing dots and spaces (`.git. `)."""
    name = unicodedata.normalize("NFD", _IGNORABLE.sub("", name))
    name = unicodedata.normalize("NFC", name.casefold())
    return name.split(":", 1)[0].rstrip(". ")


def protected_name_of(component: str) -> str | None:
    """The protected name (`.git`, ...) a path component may open on some file system (a
    case-insensitive or normalising one, NTFS 8.3 names included), or None.

    Linux writers use the name as given, but the workspace may be shared with a macOS or
    Windows machine, or live on such a file system (a mounted volume, a case-folding ext4
    directory), where `.GIT/hooks/x` is a git hook."""
    folded = _fold_name(component)
    short = _SHORT_NAME.fullmatch(folded)
    for name in PROTECTED_NAMES:
        canonical = _fold_name(name)
        if folded == canonical:
            return name
        if short and canonical.lstrip(".")[:6] == short.group("stem"):
            return name
    return None


def write_denial(policy: SandboxPolicy, path: Path) -> str | None:
    """Why writing `path` is not allowed under `policy`, or None when it is. The path is judged
    by where it leads now (symlinks resolved); a writer must then do its IO on that resolved
    path without following symlinks (`sandbox.beneath`), or the answer can go stale."""
    return resolved_write_denial(policy, path, _real(path))


def resolved_write_denial(policy: SandboxPolicy, path: Path, target: Path) -> str | None:
    """`write_denial` for `path` known to lead to the real path `target`: `target` is judged by
    name, nothing more is resolved. (A writer re-judges the path it is about to touch this way,
    since its IO follows no symlink.)"""
    if policy.mode == "danger-full-access":
        return None
    if policy.mode == "read-only":
        return f"{path}: writes are not allowed in the read-only sandbox"
    target = Path(os.path.normpath(target))
    for hidden in policy.deny_paths:
        if _is_within(target, _real(hidden)):
            return f"{path}: denied by permission profile `{policy.profile}`"
    for kept in policy.read_only_paths:
        if _is_within(target, _real(kept)):
            return f"{path}: read-only in permission profile `{policy.profile}`"
    for gitdir in protected_gitdirs(policy):
        if _is_within(target, gitdir):
            return f"{path}: the git directory is read-only inside the sandbox"
    # Every root holding the target counts: a protected name directly under a nested root
    # (an --add-dir inside the workspace) is as protected as one under the workspace.
    inside = [r for r in (_real(r) for r in policy.writable_roots()) if _is_within(target, r)]
    for root in inside:
        first = next(iter(target.relative_to(root).parts), None)
        protected = protected_name_of(first) if first is not None else None
        if protected is None:
            continue
        alias = (
            "" if first == protected else f" (it is {protected} on case-insensitive file systems)"
        )
        return f"{path}: {first} is read-only inside the sandbox{alias}"
    if inside:
        return None
    return f"{path}: outside the writable roots of the workspace-write sandbox"
