"""Every git command the runner itself runs on a workspace goes through here.

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
* sets `GIT_ATTR_NOSYSTEM=1`, `GIT_TERMINAL_PROMPT=0`, `GIT_OPTIONAL_LOCKS=0`, a `cat` pager,
  and drops `GIT_EXTERNAL_DIFF`.

The system config is kept (`GIT_CONFIG_NOSYSTEM` is not set): it is root's and outside every
writable root, and containers commonly put `safe.directory` there.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["git_argv", "git_env", "run_git", "run_git_text"]

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


def git_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env.pop("GIT_EXTERNAL_DIFF", None)
    env.update(
        GIT_ATTR_NOSYSTEM="1",
        GIT_TERMINAL_PROMPT="0",
        GIT_OPTIONAL_LOCKS="0",
        GIT_PAGER="cat",
        PAGER="cat",
    )
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


def _filter_drivers(globals_: list[str], cwd: Path, env: Mapping[str, str]) -> list[str]:
    try:
        done = subprocess.run(
            ["git", *globals_, "config", "-z", "--name-only", "--get-regexp", r"^filter\."],
            cwd=cwd,
            env=dict(env),
            capture_output=True,
            check=False,
        )
    except OSError:
        return []
    drivers: list[str] = []
    for raw in done.stdout.split(b"\0"):
        name = raw.decode("utf-8", "surrogateescape")
        driver = name[len("filter.") : name.rfind(".")] if name.count(".") >= 2 else ""
        if driver and driver not in drivers:
            drivers.append(driver)
    return drivers


def git_argv(args: Sequence[str], *, cwd: Path, env: Mapping[str, str]) -> list[str]:
    """The full, hardened argv for `git <args>` (may run `git config` once to list filters)."""
    globals_, sub, rest = _split(args)
    safe = list(SAFE_CONFIG)
    if sub is not None and sub not in _NO_FILTERS:
        for driver in _filter_drivers(globals_, cwd, env):
            safe += [f"filter.{driver}.{key}=" for key in ("process", "clean", "smudge")]
            safe.append(f"filter.{driver}.required=false")
    config = [part for item in safe for part in ("-c", item)]
    if sub is None:
        return ["git", *config, *globals_]
    extra = ["--no-ext-diff", "--no-textconv"] if sub in _DIFFING else []
    return ["git", *config, *globals_, sub, *extra, *rest]


def run_git(
    args: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    input: bytes | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """`git <args>` hardened as described above, output captured, never raising on exit
    status (OSError when git cannot be started, TimeoutExpired past `timeout`)."""
    full_env = git_env(env)
    return subprocess.run(
        git_argv(args, cwd=cwd, env=full_env),
        cwd=cwd,
        env=full_env,
        input=input,
        capture_output=True,
        timeout=timeout,
        check=False,
    )


def run_git_text(
    args: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    timeout: float | None = None,
    errors: str = "replace",
) -> subprocess.CompletedProcess[str]:
    """`run_git` with text in and out (UTF-8, newlines translated as in text mode)."""
    done = run_git(
        args,
        cwd=cwd,
        env=env,
        input=None if input is None else input.encode("utf-8"),
        timeout=timeout,
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, _text(done.stdout, errors), _text(done.stderr, errors)
    )


def _text(data: bytes, errors: str) -> str:
    # What subprocess's text mode gives: universal newlines.
    return data.decode("utf-8", errors).replace("\r\n", "\n").replace("\r", "\n")
