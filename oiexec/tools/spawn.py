"""Starting a command so that it ends with the runner.

Commands end with the runner, even a SIGKILLed one (Linux): the first process of each command
(bwrap's wrapper shell, or the command itself under Landlock) gets a parent-death signal,
SIGKILL. What that process started goes with it through the sandbox: bwrap dies with its
wrapper and its PID namespace with it; the Landlock backend's reaper sees the runner's end of
its socket close (see oiexec/sandbox/reaper.py). The kernel sends the signal when the *thread*
that forked the child ends, so commands are forked only from a thread that lasts as long as
the process: the main thread, or one spawner thread kept for the purpose.

Setting the signal in a Python `preexec_fn` makes subprocess fork the whole runner (its page
tables copied, ~2-3 ms for a 60 MiB runner) instead of vfork. So where nothing else has to
run in the child, `tie` sets it from outside Python: the command starts as the system's
`setpriv --pdeathsig KILL` (resolved like every program the runner starts outside the
sandbox, `oiexec.core.programs`), which execs `/bin/sh` to check that its parent is still the
runner (else the runner died before the signal was set, and the command exits) and then
execs the command, all in one process. A command that is a `/bin/sh -c` script (bwrap's
wrapper) gets the check at the head of its own script, so the tie costs one exec.
"""

from __future__ import annotations

import ctypes
import os
import queue
import re
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from oiexec.core import programs

__all__ = ["spawner", "tie", "tied_to_runner"]

_T = TypeVar("_T")
_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None


def tied_to_runner(inner: Callable[[], object] | None) -> Callable[[], object] | None:
    """`inner` (the sandbox's preexec_fn), preceded in the child by PR_SET_PDEATHSIG=SIGKILL.

    A runner that died between fork and prctl would never send the signal: the child then
    has a new parent and kills itself. Set first, so nothing the child does before exec runs
    untied; dropping capabilities (Landlock backend) keeps the setting, as the kernel clears
    it only when credentials are raised or changed, never when they shrink.
    """
    libc = _libc
    if libc is None:
        return inner
    runner = os.getpid()

    def preexec() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != runner:
            os.kill(os.getpid(), signal.SIGKILL)
        if inner is not None:
            inner()

    return preexec


#: Exit status of a command whose runner died before its parent-death signal was set (nobody
#: reads it: the runner is gone).
ORPHANED_EXIT_CODE = 125
_SETPRIV_FALLBACKS = ("/usr/bin/setpriv", "/bin/setpriv")
_ENV_FALLBACKS = ("/usr/bin/env", "/bin/env")
_SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: Variables `/bin/sh` rewrites on its way to the command (dash: IFS, OPTIND, PPID; PWD is
#: put back by the script itself).
_SHELL_OWNED = frozenset({"IFS", "OPTIND", "PPID"})
#: What an executable file starts with that the kernel runs; anything else fails with ENOEXEC
#: under subprocess, but a shell's `exec` would run it as a script.
_EXEC_MAGIC = (b"#!", b"\x7fELF")


class _Tie:
    """What this host offers for tying commands without a fork, probed once per setpriv."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: setpriv path -> (it works, /bin/sh passes an environment through unchanged).
        self._probed: dict[str, tuple[bool, bool]] = {}

    def setpriv(self, *, through_shell: bool) -> str | None:
        path = programs.find("setpriv", fallbacks=_SETPRIV_FALLBACKS)
        if path is None:
            return None
        with self._lock:
            probed = self._probed.get(path)
            if probed is None:
                probed = self._probed[path] = _probe(path)
        works, transparent = probed
        return path if works and (transparent or not through_shell) else None


def _check(runner: int) -> str:
    return f'[ "$PPID" = {runner} ] || exit {ORPHANED_EXIT_CODE}; '


def _probe(setpriv: str) -> tuple[bool, bool]:
    """Whether `setpriv --pdeathsig` runs a command (util-linux >= 2.33), and whether the
    shell between it and the command leaves a plain environment as it was."""
    env_program = programs.find("env", fallbacks=_ENV_FALLBACKS)
    argv = [setpriv, "--pdeathsig", "KILL", "--", "/bin/sh", "-c"]
    script = _check(os.getpid()) + "unset PWD; "
    try:
        if env_program is None:
            done = subprocess.run([*argv, script + "exit 0"], env={}, capture_output=True)
            return done.returncode == 0, False
        probe = {"OIEXEC_TIE_PROBE": "1"}
        done = subprocess.run(
            [*argv, script + 'exec "$0"', env_program], env=probe, capture_output=True
        )
    except OSError:
        return False, False
    return done.returncode == 0, done.stdout == b"OIEXEC_TIE_PROBE=1\n"


_tie = _Tie()


def tie(
    argv: list[str],
    preexec: Callable[[], object] | None,
    *,
    env: Mapping[str, str],
    cwd: Path,
) -> tuple[list[str], Callable[[], object] | None]:
    """The argv and `preexec_fn` that start `argv` tied to the runner (see the module doc).

    With a `preexec_fn` of its own the child is a fork anyway, and the signal is set there
    (`tied_to_runner`). Without one, the tie goes into the argv when this host can (a trusted
    setpriv with --pdeathsig) and the command would start exactly as it does without it;
    otherwise (and for what subprocess would refuse to start, so that it fails the same way)
    the tie falls back to `tied_to_runner`.
    """
    if _libc is None:
        return argv, preexec
    if preexec is not None:
        return argv, tied_to_runner(preexec)
    if len(argv) >= 3 and argv[0] == "/bin/sh" and argv[1] == "-c":
        setpriv = _tie.setpriv(through_shell=False)
        if setpriv is not None:
            script = _check(os.getpid()) + argv[2]
            return [setpriv, "--pdeathsig", "KILL", "--", "/bin/sh", "-c", script, *argv[3:]], None
    elif argv and _passes_through_shell(argv[0], env, cwd):
        setpriv = _tie.setpriv(through_shell=True)
        if setpriv is not None:
            pwd = env.get("PWD")
            keep_pwd = "unset PWD; " if pwd is None else f"PWD={shlex.quote(pwd)}; "
            script = _check(os.getpid()) + keep_pwd + 'exec "$0" "$@"'
            return [setpriv, "--pdeathsig", "KILL", "--", "/bin/sh", "-c", script, *argv], None
    return argv, tied_to_runner(None)


def _passes_through_shell(program: str, env: Mapping[str, str], cwd: Path) -> bool:
    """Whether `exec "$0"` in /bin/sh starts `program` with `env` exactly as subprocess would:
    every variable survives the shell, and the program is found and runnable, so a failure
    still raises in the runner rather than becoming the shell's exit status 127."""
    if any(name in _SHELL_OWNED or not _SHELL_NAME.match(name) for name in env):
        return False
    if "/" in program:
        found = os.path.join(cwd, program)
    elif "PATH" in env:  # the shell's default search path is not subprocess's
        # Both take the first executable file; an empty entry is the current directory.
        candidates = (os.path.join(cwd, entry, program) for entry in env["PATH"].split(":"))
        found = next((c for c in candidates if os.path.isfile(c) and os.access(c, os.X_OK)), "")
    else:
        return False
    if not (os.path.isfile(found) and os.access(found, os.X_OK)):
        return False
    try:
        with open(found, "rb") as f:
            return f.read(4).startswith(_EXEC_MAGIC)
    except OSError:
        return False


class _Spawner:
    """Forks on one long-lived daemon thread for callers on other threads (see the module
    doc: a child's parent-death signal follows the thread that forked it)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def run(self, job: Callable[[], _T]) -> _T:
        if threading.current_thread() is threading.main_thread() or _libc is None:
            return job()
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._serve, name="oiexec-spawner", daemon=True
                )
                self._thread.start()
        done: Future[_T] = Future()
        self._jobs.put((job, done))
        return done.result()

    def _serve(self) -> None:
        while True:
            job, done = self._jobs.get()
            try:
                done.set_result(job())
            except BaseException as exc:
                done.set_exception(exc)


#: The one spawner of the process.
spawner = _Spawner()
