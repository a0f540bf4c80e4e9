"""The git helper's own contract: one error type, timeouts, the environment it gives git, and
repository discovery."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from oiexec.core import programs
from oiexec.git import GitError, find_project_root, is_git_marker, run_git, run_git_text


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def test_a_failing_command_is_returned_unless_checked(repo: Path) -> None:
    done = run_git_text(["rev-parse", "--verify", "-q", "HEAD"], cwd=repo)
    assert done.returncode != 0
    with pytest.raises(GitError) as info:
        # Global options before the subcommand do not hide its name from the message.
        args = ["-c", "core.quotepath=off", "rev-parse", "--verify", "nope"]
        run_git_text(args, cwd=repo, check=True)
    error = info.value
    assert str(error).startswith(f"git rev-parse failed in {repo}: ")
    assert error.returncode not in (None, 0)
    assert error.stderr and error.stderr in str(error)


def _fake_git(tmp_path: Path, body: str, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "git"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    # Resolved afresh from this PATH (the run's resolution is back after the test).
    monkeypatch.setattr(programs, "_STATE", programs._State())


def test_an_overrun_is_a_git_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_git(tmp_path, "exec sleep 30", monkeypatch)
    with pytest.raises(GitError, match=r"git status timed out after 0.2s in "):
        run_git(["status"], cwd=tmp_path, timeout=0.2)


def test_no_git_at_all_is_a_git_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    monkeypatch.setattr(programs, "_STATE", programs._State())
    with pytest.raises(GitError, match=f"cannot run git in {tmp_path}"):
        run_git(["status"], cwd=tmp_path)


def test_git_gets_the_hardened_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # It has no filter drivers to list, and prints what it was given for anything else.
    script = 'case "$*" in *--get-regexp*) exit 1;; esac; env; echo "argv: $*"'
    _fake_git(tmp_path, script, monkeypatch)
    monkeypatch.setenv("GIT_DIR", "/elsewhere/.git")
    monkeypatch.setenv("GIT_INDEX_FILE", "/elsewhere/index")
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", "/bin/evil")
    out = run_git_text(
        ["diff", "HEAD"], cwd=tmp_path, extra_env={"GIT_INDEX_FILE": "/private/index"}
    ).stdout
    env = dict(line.split("=", 1) for line in out.splitlines() if "=" in line and " " not in line)
    assert "GIT_DIR" not in env and "GIT_EXTERNAL_DIFF" not in env
    assert env["GIT_INDEX_FILE"] == "/private/index"  # the caller's own choice is kept
    assert (env["GIT_TERMINAL_PROMPT"], env["GIT_OPTIONAL_LOCKS"], env["LC_ALL"]) == ("0", "0", "C")
    argv = next(line for line in out.splitlines() if line.startswith("argv: "))
    assert "core.hooksPath=/dev/null" in argv
    assert argv.endswith("diff --no-ext-diff --no-textconv HEAD")


def test_the_callers_environment_is_left_untouched(repo: Path) -> None:
    before = dict(os.environ)
    run_git(["status"], cwd=repo, extra_env={"GIT_INDEX_FILE": str(repo / "x")})
    assert dict(os.environ) == before


def test_project_root_needs_a_real_repository(tmp_path: Path, repo: Path) -> None:
    sub = repo / "a" / "b"
    sub.mkdir(parents=True)
    assert find_project_root(sub) == repo
    empty = tmp_path / "empty"
    (empty / ".git").mkdir(parents=True)  # a sandbox mount point, not a repository
    assert not is_git_marker(empty / ".git")
    assert find_project_root(empty) is None
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    (worktree / ".git").write_text(f"gitdir: {repo / '.git'}\n")
    assert find_project_root(worktree) == worktree


def test_project_root_by_other_markers(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "src").mkdir()
    assert find_project_root(tmp_path / "src", (".git", "pyproject.toml")) == tmp_path
    assert find_project_root(tmp_path / "src") != tmp_path  # only `.git` by default
