"""Commands end with the runner (issue 21): a SIGKILLed runner takes every command, every
descendant (background, setsid'd, double-forked) and the sandbox's helpers with it, within a
second, under bwrap and Landlock, as root and unprivileged; the temp dirs it left are removed
by the next run, while those of a run still going are kept.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from oiexec.core import rundirs
from tests.sandbox.conftest import BACKENDS, RUNNER_PYTHON, Box, exec_backend_args
from tests.sandbox.support import alive
from tests.support.model_server import ModelServer, call, reply

#: How long everything may take to die (the promise is a second; this bound is for load).
DEADLINE_S = 3.0


def _script(mark: str) -> str:
    """Background, setsid'd and double-forked children, all marked in their environment; the
    command itself then waits, so the runner is inside the tool call when it is killed."""
    return "; ".join(
        [
            f"export OI_DEATH_MARK={mark}",
            "sleep 300 & echo $! >> pids",
            "setsid sleep 300 & echo $! >> pids",
            "( setsid sh -c 'sleep 300 & echo $! >> pids; wait' & )",
            "echo ready > ready",
            "sleep 300",
        ]
    )


def _start(box: Box, server: ModelServer, backend: str, prompt: str) -> subprocess.Popen[str]:
    """`interpreter exec --json` in the background (setpriv execs: its pid is the runner's)."""
    argv = box.as_me(
        [RUNNER_PYTHON, "-m", "oiexec", "exec", "--json", "-s", "workspace-write",
         *exec_backend_args(backend), *server.config_args(), prompt]
    )  # fmt: skip
    return subprocess.Popen(
        argv,
        cwd=box.ws,
        env=box.env(OPENINTERPRETER_HOME=str(box.root / "home")),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(what: Callable[[], bool], timeout: float, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the runner ended early ({proc.returncode}):\n{out}\n{err}")
        if time.monotonic() > deadline:
            pytest.fail("timed out waiting for the command to start")
        time.sleep(0.02)


def _processes() -> dict[int, tuple[int, bytes]]:
    """pid -> (ppid, environ) of every live process."""
    out: dict[int, tuple[int, bytes]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_bytes()
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(b")", 1)[1].split()
        if fields[0] not in (b"Z", b"X"):
            out[int(entry)] = (int(fields[1]), environ)
    return out


def _marked(mark: str) -> set[int]:
    needle = f"OI_DEATH_MARK={mark}".encode()
    return {pid for pid, (_, env) in _processes().items() if needle in env.split(b"\0")}


def _descendants(root: int) -> set[int]:
    """The runner's process tree now: the wrapper shell, bwrap, the reaper, the command."""
    table = _processes()
    found: set[int] = set()
    frontier = {root}
    while frontier:
        children = {pid for pid, (ppid, _) in table.items() if ppid in frontier}
        frontier = children - found
        found |= children
    return found


def _all_dead(pids: set[int], timeout: float) -> set[int]:
    """The pids still alive after `timeout` (polled)."""
    deadline = time.monotonic() + timeout
    while (left := {p for p in pids if alive(p)}) and time.monotonic() < deadline:
        time.sleep(0.01)
    return left


def _run_dirs_of(pid: int) -> list[Path]:
    """Run directories (see oiexec.core.rundirs) that the runner `pid` made in /tmp."""
    return [
        Path("/tmp", name)
        for name in os.listdir("/tmp")
        if name.startswith(rundirs.PREFIXES) and f"-{pid}." in name
    ]


@pytest.fixture
def leftovers() -> Iterator[list[Path]]:
    """Dirs a test had to leave for a while; removed whatever happens."""
    paths: list[Path] = []
    yield paths
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)


def _reap(proc: subprocess.Popen[str]) -> None:
    proc.wait(timeout=10)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def _kill_and_check(proc: subprocess.Popen[str], mark: str) -> None:
    tree = _descendants(proc.pid)
    marked = _marked(mark)
    # The command's shell, `sleep &`, `setsid sleep`, the daemon's shell and sleep, and the
    # final sleep: unless they are all there, the test would prove nothing.
    assert len(marked) >= 5, (marked, tree)
    everyone = tree | marked
    started = time.monotonic()
    os.kill(proc.pid, signal.SIGKILL)
    _reap(proc)
    left = _all_dead(everyone, DEADLINE_S)
    took = time.monotonic() - started
    for pid in left:  # never leave them running for the next test
        os.kill(pid, signal.SIGKILL)
    assert not left, f"still running {took:.1f}s after the runner died: {sorted(left)}"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_killed_runner_takes_its_commands_along(
    box: Box, model_server: ModelServer, backend: str, leftovers: list[Path]
) -> None:
    tag = uuid.uuid4().hex[:8]
    killed, live, later = f"killed-{tag}", f"live-{tag}", f"later-{tag}"
    step = {"cmd": _script(f"a-{tag}"), "yield_time_ms": 30000}
    model_server.route(killed, reply(tool_calls=[call("exec_command", step)]))
    model_server.route(
        live, reply(tool_calls=[call("exec_command", {"cmd": "echo ready > ready-live; sleep 300",
                                                      "yield_time_ms": 30000})])
    )  # fmt: skip
    model_server.route(later, reply("done"))

    runner = _start(box, model_server, backend, killed)
    _wait_for(lambda: (box.ws / "ready").exists() and len(_marked(f"a-{tag}")) >= 5, 60, runner)
    left_by_killed = _run_dirs_of(runner.pid)
    leftovers += left_by_killed
    _kill_and_check(runner, f"a-{tag}")
    if backend == "landlock":
        return  # no private /tmp: this run left no temp dir (the test of the sweep is bwrap's)
    # Its private /tmp stays behind: nothing of the dead runner could remove it.
    assert any(p.name.startswith("oiexec-tmp-") for p in left_by_killed), left_by_killed
    assert all(p.exists() for p in left_by_killed)

    # A run still going keeps its dirs while another run starts and cleans up.
    going = _start(box, model_server, backend, live)
    try:
        _wait_for(lambda: (box.ws / "ready-live").exists(), 60, going)
        kept = _run_dirs_of(going.pid)
        leftovers += kept
        assert kept, "the live run made no temp dir to keep"
        done = _start(box, model_server, backend, later)
        _, err = done.communicate(timeout=120)
        assert done.returncode == 0, err
        assert not any(p.exists() for p in left_by_killed), left_by_killed
        assert all(p.is_dir() for p in kept), kept
    finally:
        going.kill()
        _reap(going)
