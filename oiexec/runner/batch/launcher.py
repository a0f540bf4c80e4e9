"""Starting task processes cheaply: forked from a server that has already imported the runner.

Every task of a batch is its own `interpreter exec` process (its own session, sandbox,
signals and exit code, so one task can never take another down). Started fresh, each such
process spends about 0.4 CPU-seconds importing click, pydantic, httpx and the runner before
it does anything; at 8 jobs on 2 cores that start-up, not the model, sets the pace. So each
task is a fork of the preloaded server of `oiexec/runner/forkserver.py` (shared with the
Python API): a process as separate as before (own session and process group, own stdio,
environment and working directory), without the import cost, and sharing the imported code's
pages copy-on-write.
"""

from __future__ import annotations

import contextlib
import multiprocessing.process
import os
import runpy
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from oiexec.runner.forkserver import preloaded_context, tie_to_caller

__all__ = ["Launcher", "TaskProcess"]


class TaskProcess:
    """One started task: its pid (also its process group id) and its exit status."""

    def __init__(self, process: multiprocessing.process.BaseProcess) -> None:
        self._process = process
        pid = process.pid
        assert pid is not None  # set by start()
        self.pid: int = pid

    def wait(self, timeout: float) -> int | None:
        """The exit status (negative: killed by that signal), or None if still running
        after `timeout` seconds."""
        self._process.join(timeout)
        return self._process.exitcode


class Launcher:
    """Starts `python -m MODULE ARGS...` equivalents as forks of a preloaded server."""

    def __init__(self) -> None:
        self._context = preloaded_context()

    def start(
        self,
        module: str,
        args: Sequence[str],
        *,
        env: Mapping[str, str],
        stdin: str,
        stdout: Path,
        stderr: Path,
        append: bool,
    ) -> TaskProcess:
        """Runs module `module` as `__main__` with `args`, in a new session, with `stdin` as its
        standard input and its output written to the files `stdout` and `stderr` (appended to
        with `append`). The working directory is the caller's; `env` is the whole environment."""
        process = self._context.Process(
            target=_task_main,
            args=(
                module,
                list(args),
                dict(env),
                os.getcwd(),
                stdin,
                str(stdout),
                str(stderr),
                append,
            ),
            daemon=False,
        )
        process.start()
        return TaskProcess(process)


def _task_main(
    module: str,
    args: list[str],
    env: dict[str, str],
    cwd: str,
    stdin: str,
    stdout: str,
    stderr: str,
    append: bool,
) -> None:
    """In the forked task process: become what `python -m MODULE ARGS` would have been."""
    # Its own session and process group, as `start_new_session=True` gives: the batch signals
    # and kills the task with everything it started, and a terminal's Ctrl-C reaches only the
    # batch, which decides.
    os.setsid()
    # A batch killed outright (kill -9, OOM) must not leave its tasks running to the end.
    tie_to_caller()
    with tempfile.TemporaryFile() as prompt:
        # A file, not a pipe: a long prompt cannot block on a full pipe buffer.
        prompt.write(stdin.encode("utf-8"))
        prompt.seek(0)
        os.dup2(prompt.fileno(), 0)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
    for fd, path in ((1, stdout), (2, stderr)):
        target = os.open(path, flags, 0o644)
        os.dup2(target, fd)
        os.close(target)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    # The server's stdio objects wrap what fds 0-2 were; give the task fresh ones over the new.
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 - lives as long as the process
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
    sys.argv = [module, *args]
    code: object = 0
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
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
        code = 0
    elif not isinstance(code, int):
        with contextlib.suppress(Exception):
            print(code, file=sys.stderr, flush=True)
        code = 1
    # Straight out: no atexit handlers or multiprocessing clean-up that belong to the server.
    os._exit(code & 0xFF)
