"""The git helper's own contract: one error type, timeouts, the environment it gives git,
repository discovery, the batch helpers through the same policy, and a planted repository
config that makes git run nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from oiexec.core import programs
from oiexec.git import (
    GitError,
    add_worktree,
    clone_at,
    find_project_root,
    is_git_marker,
    prune_worktrees,
    remove_worktree,
    repository_root,
    resolve_commit,
    run_git,
    run_git_text,
)


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


# --- the batch helpers run git through the same policy ------------------------------------


def _committed(path: Path, files: dict[str, str]) -> str:
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    for name, text in files.items():
        (path / name).write_text(text)
    ident = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "-C", str(path), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(path), *ident, "commit", "-qm", "base"], check=True)
    head = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True)
    return head.stdout.decode().strip()


def test_a_batch_worktree_ignores_the_git_location_the_runner_inherited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As when the runner is started from a pre-commit hook: git's own variables point at the
    # commit being made; the worktree must not write that index, nor look in that GIT_DIR.
    source = tmp_path / "source"
    head = _committed(source, {"a.txt": "a\n"})
    hook_index = tmp_path / "hook-index"
    monkeypatch.setenv("GIT_INDEX_FILE", str(hook_index))
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))
    assert repository_root(source / ".") == source
    assert resolve_commit(source, None) == head
    add_worktree(source, tmp_path / "wt", head)
    assert (tmp_path / "wt" / "a.txt").read_text() == "a\n"
    assert not hook_index.exists()
    remove_worktree(source, tmp_path / "wt")
    assert not (tmp_path / "wt").exists()


def test_a_worktree_replaces_a_stale_one_and_removing_leaves_no_registration(
    tmp_path: Path,
) -> None:
    source = tmp_path / "source"
    head = _committed(source, {"a.txt": "a\n"})
    dest = tmp_path / "out" / "wt"

    def registered() -> list[str]:
        listing = run_git_text(["worktree", "list", "--porcelain"], cwd=source, check=True)
        return [line for line in listing.stdout.splitlines() if line.startswith("worktree ")]

    add_worktree(source, dest, head)
    (dest / "a.txt").write_text("edited\n")
    add_worktree(source, dest, head)  # a worktree left there by an earlier run: replaced
    assert (dest / "a.txt").read_text() == "a\n"
    shutil.rmtree(tmp_path / "out")  # the output directory deleted by hand
    prune_worktrees(source)  # as a batch does once per repository, before its first task
    add_worktree(source, dest, head)
    assert (dest / "a.txt").read_text() == "a\n"
    assert registered() == [f"worktree {source}", f"worktree {dest}"]
    remove_worktree(source, dest)
    assert not dest.exists()
    assert registered() == [f"worktree {source}"]
    shutil.rmtree(tmp_path / "out")
    remove_worktree(source, dest)  # nothing there: fine


def test_a_batch_worktree_keeps_the_sources_filters_and_runs_no_hook(tmp_path: Path) -> None:
    # The source is the user's own repository: its smudge filter (think git-lfs) runs on
    # checkout, as git would run it; its post-checkout hook does not (hooks never run).
    source = tmp_path / "source"
    head = _committed(source, {".gitattributes": "*.txt filter=up\n", "a.txt": "abc\n"})
    run_git(["config", "filter.up.smudge", "tr a-z A-Z"], cwd=source, check=True)
    hook = source / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {tmp_path / 'hook-ran'}\n")
    hook.chmod(0o755)
    add_worktree(source, tmp_path / "wt", head)
    assert (tmp_path / "wt" / "a.txt").read_text() == "ABC\n"
    assert not (tmp_path / "hook-ran").exists()
    # Commands on a worktree a model has used blank every filter driver instead.
    (tmp_path / "wt" / "a.txt").unlink()
    run_git(["checkout", "--", "a.txt"], cwd=tmp_path / "wt", check=True)
    assert (tmp_path / "wt" / "a.txt").read_text() == "abc\n"


def test_batch_helper_failures_name_the_step_and_say_gits_words(tmp_path: Path) -> None:
    source = tmp_path / "source"
    _committed(source, {"a.txt": "a\n"})
    with pytest.raises(GitError, match=r"'nope' is not a commit in "):
        resolve_commit(source, "nope")
    with pytest.raises(GitError, match=r"git worktree add failed for .*: fatal: invalid ref"):
        add_worktree(source, tmp_path / "wt", "f" * 40)
    with pytest.raises(GitError, match=r" is not inside a git repository"):
        repository_root(tmp_path)
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "bare")], check=True)
    with pytest.raises(GitError, match=r"bare repository; a work tree is needed"):
        repository_root(tmp_path / "bare")
    with pytest.raises(GitError, match=r"^git clone failed for file://"):
        clone_at(f"file://{tmp_path / 'none'}", tmp_path / "clone", None)


def test_a_clone_checks_out_a_branch_of_the_remote(tmp_path: Path) -> None:
    source = tmp_path / "source"
    head = _committed(source, {"a.txt": "a\n"})
    run_git(["branch", "topic"], cwd=source, check=True)
    dest = tmp_path / "tasks" / "t" / "worktree"
    assert clone_at(f"file://{source}", dest, "topic") == head
    assert (dest / "a.txt").read_text() == "a\n"
    with pytest.raises(GitError, match=r"'zz' is not a branch, tag or commit of file://"):
        clone_at(f"file://{source}", dest, "zz")


def test_the_batch_helpers_start_the_resolved_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The run's one resolved git (here a stand-in that logs its arguments), never a name
    # looked up again, and with the hardening options.
    log = tmp_path / "log"
    _fake_git(tmp_path, f'echo "$*" >> {log}; exit 1', monkeypatch)
    with pytest.raises(GitError, match=r"'HEAD' is not a commit in "):
        resolve_commit(tmp_path, None)
    with pytest.raises(GitError, match=r"^git clone failed for file:///x: exit status 1$"):
        clone_at("file:///x", tmp_path / "clone", None)
    calls = log.read_text().splitlines()
    assert [call.split(" rev-parse ")[1] for call in calls[:1]] == [
        "--verify -q --end-of-options HEAD^{commit}"
    ]
    assert all("-c core.hooksPath=/dev/null" in call for call in calls), calls
    assert calls[1].endswith("clone --no-checkout -- file:///x " + str(tmp_path / "clone"))


# --- a planted repository runs nothing in the runner --------------------------------------


def _plant(repo: Path, marks: Path) -> None:
    """Every program a repository's own config and attributes can make git run: each one
    leaves a file named after itself in `marks`."""
    marks.mkdir()
    evil = marks.parent / "evil"
    evil.write_text(f'#!/bin/sh\ntouch "{marks}/$1"\nexec cat\n')
    evil.chmod(0o755)
    hooks = marks.parent / "hooks"
    hooks.mkdir()
    for hook in ("pre-commit", "post-checkout", "post-index-change", "reference-transaction"):
        (hooks / hook).write_text(f"#!/bin/sh\n{evil} hook-{hook} </dev/null\n")
        (hooks / hook).chmod(0o755)
    (repo / ".gitattributes").write_text("* filter=ev diff=ev\n")
    with (repo / ".git" / "config").open("a") as config:
        config.write(
            f'[core]\n\tfsmonitor = "{evil} fsmonitor"\n\thooksPath = {hooks}\n'
            f'[diff]\n\texternal = "{evil} external-diff"\n'
            f'[diff "ev"]\n\ttextconv = "{evil} textconv"\n'
            f'[filter "ev"]\n\tclean = "{evil} clean"\n\tsmudge = "{evil} smudge"\n'
            f'\tprocess = "{evil} process"\n\trequired = true\n'
        )


def test_a_planted_config_runs_nothing_through_run_git(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    _committed(repo, {"a.txt": "a\n"})
    marks = tmp_path / "marks"
    _plant(repo, marks)
    (repo / "a.txt").write_text("changed\n")
    (repo / "new.txt").write_text("new\n")
    # What the runner's callers run: snapshots and `--diff`, review, the walker, records.
    for args in (
        ["status", "--porcelain"],
        ["diff", "HEAD"],
        ["diff", "--stat", "HEAD"],
        ["log", "-p", "-1"],
        ["show", "HEAD"],
        ["ls-files", "--others", "--exclude-standard"],
        ["add", "--all", "--", "."],
        ["write-tree"],
        ["diff", "--cached", "HEAD"],
        ["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "x"],
        ["read-tree", "HEAD~1"],
        ["checkout", "--", "a.txt"],
    ):
        run_git(args, cwd=repo, check=True)
    assert (repo / "a.txt").read_text() == "a\n"  # the checkout ran, unfiltered
    assert sorted(p.name for p in marks.iterdir()) == []
    # A plain git does run them (the plant is live), once the failing process filter is let
    # go of (`evil` does not speak its protocol, and a required filter stops each command).
    (repo / "a.txt").write_text("again\n")
    for args in (
        ["status"],
        ["diff", "HEAD~1", "HEAD"],
        ["log", "-p", "--no-ext-diff"],
        ["add", "-A"],
    ):
        plain = ["git", "-c", "filter.ev.required=false", *args]
        subprocess.run(plain, cwd=repo, stdin=subprocess.DEVNULL, capture_output=True)
    ran = {p.name for p in marks.iterdir()}
    assert {"fsmonitor", "external-diff", "textconv", "process", "hook-post-index-change"} <= ran
