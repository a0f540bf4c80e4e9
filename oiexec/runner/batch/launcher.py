"""Starting task processes cheaply: forked from a zygote that has already imported the runner.

Every task of a batch is its own `interpreter exec` process (its own session, sandbox,
signals and exit code, so one task can never take another down). Started fresh, each such
process spends about 0.4 CPU-seconds importing click, pydantic, httpx and the runner before
it does anything; at 8 jobs on 2 cores that start-up, not the model, sets the pace. So each
task is a fork of the preloaded zygote of `oiexec/runner/zygote.py` (shared with the Python
API, reached only through a socketpair): a process as separate as before (own session and
process group, own stdio, environment and working directory), without the import cost, and
sharing the imported code's pages copy-on-write.
"""

from __future__ import annotations

import contextlib
import os
import runpy
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from oiexec.runner.child_protocol import BatchTaskArgs, close_fds
from oiexec.runner.launch import Child, LaunchError, spawn

__all__ = ["Child", "LaunchError", "Launcher", "task_main"]


class Launcher:
    """Starts `python -m oiexec ARGS...` equivalents as forks of the zygote."""

    def start(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str],
        stdin: str,
        stdout: Path | int,
        stderr: Path | int,
        append: bool,
    ) -> Child:
        """Runs the CLI with `args`, in a new session, with `stdin` as its standard input and
        its output written to the files `stdout` and `stderr` (appended to with `append`; an
        int is a file the caller opened, for the child to write to).
        The working directory is the caller's; `env` is the whole environment. Raises
        `LaunchError` when the task cannot be started. The task is signalled and waited
        for through the `Child` (`launch.py`), as the API's runs are."""
        opened: list[int] = []
        try:
            with tempfile.TemporaryFile() as prompt:
                # A file, not a pipe: a long prompt cannot block on a full pipe buffer.
                prompt.write(stdin.encode("utf-8"))
                prompt.flush()
                prompt.seek(0)
                opened.append(os.dup(prompt.fileno()))
            flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
            flags |= os.O_APPEND if append else os.O_TRUNC
            for path in (stdout, stderr):
                opened.append(
                    os.dup(path) if isinstance(path, int) else os.open(path, flags, 0o644)
                )
        except OSError as exc:
            close_fds(opened)
            raise LaunchError(f"cannot open the task's standard streams: {exc}") from None
        try:
            task = BatchTaskArgs(argv=list(args))
            return spawn("batch-task", task, env=env, cwd=os.getcwd(), fds=opened)
        finally:
            close_fds(opened)  # the child has its own copies


def task_main(args: dict[str, Any], fds: list[int]) -> int:
    """In the forked task process (the zygote's `batch-task`): become what
    `python -m oiexec ARGS` would have been; returns its exit code."""
    argv = args.get("argv")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv) or len(fds) != 3:
        return 2
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    # The zygote's stdio objects wrap what fds 0-2 were; give the task fresh ones over the new.
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 - lives as long as the process
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
    sys.argv = ["oiexec", *argv]
    code: object = 0
    try:
        runpy.run_module("oiexec", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code
    except BaseException as exc:  # what a fresh interpreter would print before exiting 1
        with contextlib.suppress(Exception):
            print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if code is None:
        return 0
    if not isinstance(code, int):
        with contextlib.suppress(Exception):
            print(code, file=sys.stderr, flush=True)
        return 1
    return code
