"""Every git command the runner itself runs goes through here, with one policy.

The workspace is the model's: a sandboxed command may have written `.git/config`, a
`.git/commondir` leading to a config of its own, `~/.gitconfig` when HOME lies in a writable
root, or the worktree's `.gitattributes`. Git runs programs named in config in many places
(`core.fsmonitor`, hooks, filter drivers, diff drivers and `diff.external`, gpg for
`log.showSignature`), and the runner is outside the sandbox, often as root. So each call here:

* overrides `core.fsmonitor=false`, `core.hooksPath=/dev/null`, `core.attributesFile=/dev/null`,
  `log.showSignature=false`, `protocol.ext.allow=never` and automatic gc/maintenance on the
  command line (which wins over every config file, and reaches git's own child processes);
* for subcommands that may run filter drivers, first lists every configured `filter.<driver>.*`
  (`git config --get-regexp`, which only reads) and blanks each driver's `process`, `clean` and
  `smudge` with `required=false`: driver names cannot be known in advance, so they are asked;
* gives diff-producing subcommands `--no-ext-diff --no-textconv`;
* sets `GIT_ATTR_NOSYSTEM=1`, `GIT_TERMINAL_PROMPT=0`, `GIT_OPTIONAL_LOCKS=0` (reading never
  rewrites the user's index), a `cat` pager and `LC_ALL=C` (callers parse git's messages), and
  drops `GIT_EXTERNAL_DIFF` and the variables that point git at another repository or index
  (`GIT_DIR`, `GIT_INDEX_FILE`, ...: set when the runner is started from a git hook), so the
  repository is always the one `cwd` (or an explicit `--git-dir`) names;
* starts the one `git` resolved at the run's start outside every writable root and the
  workspace (`oiexec.core.programs`), never whatever `git` PATH names at the time: a planted
  `.venv/bin/git` would run unconfined;
* has a timeout (`TIMEOUT`, or `QUICK_TIMEOUT` for lookups that only decorate a prompt or a
  record), and reports a git that cannot start or overruns as `GitError`, as it does a
  non-zero exit when the caller asks for `check=True`.

Every git process starts in `_run`, by `subprocess` with an environment built whole. Not
GitPython: its `Git.execute` lays the given environment over the runner's own, so an inherited
`GIT_INDEX_FILE` or `GIT_DIR` cannot be dropped, its timeout looks up `pgrep`/`ps` on PATH to
kill the process tree, and importing it (~0.2 s, plus a `git version`) would fall on every run.

The system config is kept (`GIT_CONFIG_NOSYSTEM` is not set): it is root's and outside every
writable root, and containers commonly put `safe.directory` there.

Repository discovery by marker (`find_project_root`) lives here too, since config and harness
both need it and this module sits below both.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from oiexec.core import programs

__all__ = [
    "QUICK_TIMEOUT",
    "TIMEOUT",
    "GitError",
    "add_worktree",
    "clone_at",
    "find_project_root",
    "git_executable",
    "is_git_marker",
    "remove_worktree",
    "repository_root",
    "resolve_commit",
    "run_git",
    "run_git_text",
]

#: Seconds for commands whose cost grows with the worktree (snapshots, diffs, reviews).
TIMEOUT = 300.0
#: Seconds for metadata lookups whose answer is optional (prompt variables, session records).
QUICK_TIMEOUT = 10.0

SAFE_CONFIG = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.attributesFile=/dev/null",
    "log.showSignature=false",
    "protocol.ext.allow=never",
    "gc.auto=0",
    "maintenance.auto=false",
)
#: Subcommands that never read worktree file content, so never run a filter driver. Every
#: other one may: even `write-tree` re-reads "racily clean" index entries through the clean
#: filter before it writes the index back.
_NO_FILTERS = frozenset(
    {"rev-parse", "symbolic-ref", "config", "cat-file", "merge-base", "rev-list", "init",
     "check-ignore", "log", "show", "diff-tree", "ls-tree", "ls-files", "for-each-ref",
     "show-ref", "var", "version"}
)  # fmt: skip
#: Subcommands that print diffs (and so could run an external diff or a textconv driver).
_DIFFING = frozenset({"diff", "diff-files", "diff-index", "diff-tree", "show", "log"})
#: Global options that take their value as the next argument.
_VALUED = frozenset({"-c", "-C", "--git-dir", "--work-tree", "--namespace", "--exec-path"})
#: Inherited variables that would point git at some other repository or index than `cwd`'s.
_LOCATION_VARS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
)


class GitError(RuntimeError):
    """A git command could not run, overran its timeout, or (with `check=True`) failed."""

    def __init__(
        self, message: str, *, cwd: Path, returncode: int | None = None, stderr: str = ""
    ) -> None:
        super().__init__(message)
        self.cwd = cwd
        self.returncode = returncode
        self.stderr = stderr


def git_executable(cwd: Path) -> str:
    """The absolute path of the trusted `git`; `GitError` when there is none."""
    path = programs.find("git")
    if path is None:
        raise GitError(
            f"cannot run git in {cwd}: no git found on PATH outside the workspace and the "
            "writable roots (set program_paths.git to the absolute path of a git installed "
            "outside them)",
            cwd=cwd,
        )
    return path


def _env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment every git command gets: the runner's, hardened, then `extra` (e.g. a
    private `GIT_INDEX_FILE`)."""
    env = {k: v for k, v in os.environ.items() if k not in _LOCATION_VARS}
    env.pop("GIT_EXTERNAL_DIFF", None)
    env.update(
        GIT_ATTR_NOSYSTEM="1",
        GIT_TERMINAL_PROMPT="0",
        GIT_OPTIONAL_LOCKS="0",
        GIT_PAGER="cat",
        PAGER="cat",
        LC_ALL="C",
    )
    env.update(extra or {})
    return env


def _split(args: Sequence[str]) -> tuple[list[str], str | None, list[str]]:
    """(global options, subcommand, its arguments)."""
    index = 0
    while index < len(args):
        arg = args[index]
        if arg in _VALUED:
            index += 2
        elif arg.startswith("-"):
            index += 1
        else:
            return list(args[:index]), arg, list(args[index + 1 :])
    return list(args), None, []


def _filter_drivers(
    globals_: list[str], cwd: Path, env: Mapping[str, str], timeout: float | None
) -> list[str]:
    try:
        done = subprocess.run(
            [
                git_executable(cwd),
                *globals_,
                *("config", "-z", "--name-only", "--get-regexp", r"^filter\."),
            ],
            cwd=cwd,
            env=dict(env),
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []  # the command itself will then fail or time out, and say so
    drivers: list[str] = []
    for raw in done.stdout.split(b"\0"):
        name = raw.decode("utf-8", "surrogateescape")
        driver = name[len("filter.") : name.rfind(".")] if name.count(".") >= 2 else ""
        if driver and driver not in drivers:
            drivers.append(driver)
    return drivers


def _argv(
    args: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float | None = QUICK_TIMEOUT,
    blank_filters: bool = True,
) -> list[str]:
    """The full, hardened argv for `git <args>` (may run `git config` once to list filters)."""
    globals_, sub, rest = _split(args)
    safe = list(SAFE_CONFIG)
    if blank_filters and sub is not None and sub not in _NO_FILTERS:
        for driver in _filter_drivers(globals_, cwd, env, timeout):
            safe += [f"filter.{driver}.{key}=" for key in ("process", "clean", "smudge")]
            safe.append(f"filter.{driver}.required=false")
    config = [part for item in safe for part in ("-c", item)]
    git = git_executable(cwd)
    if sub is None:
        return [git, *config, *globals_]
    extra = ["--no-ext-diff", "--no-textconv"] if sub in _DIFFING else []
    return [git, *config, *globals_, sub, *extra, *rest]


def run_git(
    args: Sequence[str],
    *,
    cwd: Path,
    extra_env: Mapping[str, str] | None = None,
    input: bytes | None = None,
    timeout: float = TIMEOUT,
    check: bool = False,
) -> subprocess.CompletedProcess[bytes]:
    """`git <args>` hardened as described above, output captured.

    Raises `GitError` when git cannot start or overruns `timeout`, and on a non-zero exit
    only with `check=True` (many callers read the status as an answer)."""
    done = _run(args, cwd=cwd, extra_env=extra_env, input=input, timeout=timeout)
    if check and done.returncode != 0:
        stderr = _text(done.stderr, "replace").strip()
        raise GitError(
            f"git {_split(args)[1] or 'git'} failed in {cwd}: "
            f"{stderr or f'exit status {done.returncode}'}",
            cwd=cwd,
            returncode=done.returncode,
            stderr=stderr,
        )
    return done


def _run(
    args: Sequence[str],
    *,
    cwd: Path,
    extra_env: Mapping[str, str] | None = None,
    input: bytes | None = None,
    timeout: float | None,
    blank_filters: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    """Where every git command starts (`run_git`, and the batch helpers below, which keep
    the filters of the user's own repository and wait as long as a clone takes); only the
    read-only lookup of `_filter_drivers` starts one of its own."""
    env = _env(extra_env)
    argv = _argv(args, cwd=cwd, env=env, timeout=timeout, blank_filters=blank_filters)
    try:
        return subprocess.run(
            argv,
            cwd=cwd,
            env=env,
            input=input,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except OSError as exc:
        raise GitError(f"cannot run git in {cwd}: {exc}", cwd=cwd) from exc
    except subprocess.TimeoutExpired as exc:
        sub = _split(args)[1] or "git"
        raise GitError(f"git {sub} timed out after {timeout:g}s in {cwd}", cwd=cwd) from exc


def run_git_text(
    args: Sequence[str],
    *,
    cwd: Path,
    extra_env: Mapping[str, str] | None = None,
    input: str | None = None,
    timeout: float = TIMEOUT,
    check: bool = False,
    errors: str = "replace",
) -> subprocess.CompletedProcess[str]:
    """`run_git` with text in and out (UTF-8, newlines translated as in text mode)."""
    done = run_git(
        args,
        cwd=cwd,
        extra_env=extra_env,
        input=None if input is None else input.encode("utf-8"),
        timeout=timeout,
        check=check,
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, _text(done.stdout, errors), _text(done.stderr, errors)
    )


def _text(data: bytes, errors: str) -> str:
    # What subprocess's text mode gives: universal newlines.
    return data.decode("utf-8", errors).replace("\r\n", "\n").replace("\r", "\n")


# --- repository discovery (no git process: it runs before anything is trusted) ------------


def is_git_marker(dot_git: Path) -> bool:
    """A real `.git`: a directory with HEAD, or a worktree's `gitdir:` file. An empty `.git`
    directory (e.g. a sandbox mount point left in /tmp) does not make a repository."""
    if dot_git.is_dir():
        return (dot_git / "HEAD").is_file()
    try:
        return dot_git.is_file() and dot_git.read_text(errors="replace").startswith("gitdir:")
    except OSError:
        return False


def find_project_root(cwd: Path, markers: Sequence[str] = (".git",)) -> Path | None:
    """The nearest ancestor of `cwd` (itself included) holding one of `markers`; a `.git`
    counts only when it is a real repository (see `is_git_marker`)."""

    def holds(directory: Path, marker: str) -> bool:
        path = directory / marker
        return is_git_marker(path) if marker == ".git" else path.exists()

    for directory in (cwd, *cwd.parents):
        if any(holds(directory, marker) for marker in markers):
            return directory
    return None


# --- workspaces for batch tasks ----------------------------------------------------------
#
# These act on the user's own repository (the source of a batch, or a fresh clone of a URL),
# never on one a model has written to, so its filter drivers stay in force (a checkout smudges
# its LFS files) and nothing is timed out (a clone takes what it takes); hooks, fsmonitor and
# the rest of the policy above apply as to every call.


def _in_own_repository(args: Sequence[str], *, cwd: Path, what: str, where: Path | str) -> str:
    """`git <args>` in the user's repository; its stdout, or `GitError` naming `what` failed
    for `where` with git's message."""
    done = _run(args, cwd=cwd, timeout=None, blank_filters=False)
    if done.returncode != 0:
        stderr = _text(done.stderr, "replace").strip()
        detail = stderr or f"exit status {done.returncode}"
        raise GitError(
            f"{what} failed for {where}: {detail}",
            cwd=Path(str(where)),
            returncode=done.returncode,
            stderr=stderr,
        )
    return _text(done.stdout, "replace")


def _commit_id(repo_root: Path, ref: str) -> str | None:
    """The commit `ref` names (a tag is peeled), or None."""
    done = _run(
        ["rev-parse", "--verify", "-q", "--end-of-options", f"{ref}^{{commit}}"],
        cwd=repo_root,
        timeout=TIMEOUT,
    )
    return _text(done.stdout, "replace").strip() if done.returncode == 0 else None


def repository_root(path: Path) -> Path:
    """The work tree root of the repository containing `path`; `GitError` when there is none."""
    if not path.is_dir():
        raise GitError(f"{path} is not inside a git repository", cwd=path)
    done = _run(["rev-parse", "--show-toplevel"], cwd=path, timeout=TIMEOUT)
    if done.returncode == 0:
        return Path(_text(done.stdout, "replace").strip())
    bare = _run(["rev-parse", "--is-bare-repository"], cwd=path, timeout=TIMEOUT)
    if bare.returncode == 0 and bare.stdout.strip() == b"true":
        raise GitError(f"{path} is a bare repository; a work tree is needed", cwd=path)
    stderr = _text(done.stderr, "replace").strip()
    if "not a git repository" in stderr:  # LC_ALL=C (`_env`)
        raise GitError(f"{path} is not inside a git repository", cwd=path)
    # Something else (e.g. git's "dubious ownership"): git's own words say what.
    raise GitError(f"git rev-parse failed in {path}: {stderr}", cwd=path, stderr=stderr)


def resolve_commit(repo_root: Path, ref: str | None) -> str:
    """The full commit id `ref` (default HEAD) names in the repository at `repo_root`."""
    commit = _commit_id(repo_root, ref or "HEAD")
    if commit is None:
        raise GitError(f"{ref or 'HEAD'!r} is not a commit in {repo_root}", cwd=repo_root)
    return commit


def add_worktree(repo_root: Path, dest: Path, commit: str) -> None:
    """A detached worktree of `repo_root` at `commit` in `dest` (a worktree already there is
    removed first). The source checkout's HEAD, index and files are left as they are. A
    registration left behind by a `dest` deleted by hand is dropped by `prune_worktrees`,
    which a batch runs once per repository rather than once per task."""
    if dest.exists():
        remove_worktree(repo_root, dest)
    _in_own_repository(
        ["worktree", "add", "--detach", "--force", "--", str(dest), commit],
        cwd=repo_root,
        what="git worktree add",
        where=repo_root,
    )


def remove_worktree(repo_root: Path, dest: Path) -> None:
    """Removes the worktree at `dest` (files and registration); nothing there is fine."""
    import shutil

    if dest.exists():
        try:
            _in_own_repository(
                ["worktree", "remove", "--force", "--force", "--", str(dest)],
                cwd=repo_root,
                what="git worktree remove",
                where=repo_root,
            )
            return  # files and registration gone: nothing left to prune
        except GitError:
            shutil.rmtree(dest, ignore_errors=True)
    # The directory was gone or would not be removed: drop what is registered for it.
    prune_worktrees(repo_root)


def prune_worktrees(repo_root: Path) -> None:
    """Drops the registrations of `repo_root`'s worktrees whose directories are gone."""
    _in_own_repository(
        ["worktree", "prune"], cwd=repo_root, what="git worktree prune", where=repo_root
    )


def clone_at(url: str, dest: Path, ref: str | None) -> str:
    """Clones `url` into `dest` (replacing what is there) with `ref` (default: the remote's
    HEAD) checked out detached; returns the commit id."""
    import shutil

    shutil.rmtree(dest, ignore_errors=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    _in_own_repository(
        ["clone", "--no-checkout", "--", url, str(dest)],
        cwd=dest.parent,
        what="git clone",
        where=url,
    )
    # A branch of the remote exists only as origin/<name> in the new clone.
    for candidate in (ref or "HEAD", f"origin/{ref}"):
        commit = _commit_id(dest, candidate)
        if commit is not None:
            break
    else:
        raise GitError(f"{ref!r} is not a branch, tag or commit of {url}", cwd=dest)
    _in_own_repository(["checkout", "--detach", commit], cwd=dest, what="git checkout", where=url)
    return commit
