"""The variables harness prompt templates are filled with (`$cwd`, `$now`, `$tree`, ...)."""

from __future__ import annotations

import platform
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from string import Template

from oiexec.core.errors import ToolInputError
from oiexec.git import QUICK_TIMEOUT, GitError, run_git_text

__all__ = ["fill", "prompt_variables"]


def _git(cwd: Path, *args: str) -> str | None:
    try:
        done = run_git_text(args, cwd=cwd, timeout=QUICK_TIMEOUT)
    except GitError:
        return None  # the prompt says "not a git repository" rather than the run failing
    return done.stdout.strip() if done.returncode == 0 else None


def _tree(cwd: Path, depth: int, limit: int) -> str:
    # Imported here: `fill` is on every run's path, the file tools only on runs whose prompt
    # uses variables (native's does not, and must not pay for them at start-up).
    from oiexec.tools.fs import list_directory
    from oiexec.tools.layout import tree

    try:
        listing = list_directory(cwd, depth=depth, limit=limit)
    except ToolInputError:
        return "(unavailable)"
    return tree(listing) or "(empty directory)"


def git_status_block(cwd: Path) -> str:
    branch = _git(cwd, "rev-parse", "--abbrev-ref", "HEAD")
    if branch is None:
        return "Not a git repository."
    status = _git(cwd, "status", "--short") or "(clean)"
    recent = _git(cwd, "log", "--oneline", "-n", "5") or "(no commits)"
    return f"Current branch: {branch}\n\nStatus:\n{status}\n\nRecent commits:\n{recent}"


def prompt_variables(
    cwd: Path,
    *,
    shell: str,
    agents_md: str | None,
    now: datetime | None = None,
) -> dict[str, str]:
    """Everything a template may use; computed once per run."""
    moment = now or datetime.now(UTC)
    uname = platform.uname()
    is_git = _git(cwd, "rev-parse", "--is-inside-work-tree") == "true"
    return {
        "cwd": str(cwd),
        "os": platform.system() or "Unknown",
        "platform": (platform.system() or "unknown").lower(),
        "os_version": f"{uname.system} {uname.release}",
        "uname": f"{uname.system} {uname.release} {uname.version} {uname.machine}",
        "shell": f"{Path(shell).name} ({shell})",
        "shell_path": shell,
        "now": moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "date": moment.strftime("%Y-%m-%d"),
        "is_git": "Yes" if is_git else "No",
        "git_status": git_status_block(cwd) if is_git else "Not a git repository.",
        "tree": _tree(cwd, 2, 200),
        "tree_short": _tree(cwd, 2, 20),
        "agents_md": agents_md or "(none)",
    }


def fill(template: str, variables: Mapping[str, str]) -> str:
    """`template` with `$name` variables filled; unknown names stay as written."""
    return Template(template).safe_substitute(variables)
