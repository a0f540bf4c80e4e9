"""Run temp dirs (oiexec.core.rundirs) and the commands' tie to the runner (tools/process.py):
the mechanisms under test_runner_death.py, each on its own."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from oiexec.core import rundirs
from oiexec.core.policy import PreparedCommand, SandboxLimits
from oiexec.sandbox.limits import Limiter, find_pids_cgroup
from oiexec.tools.process import ProcessSession
from tests.sandbox.support import alive


def _dead_pid() -> tuple[int, int]:
    """The pid and start time of a process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    start = rundirs._start_time(proc.pid)
    assert start is not None
    proc.kill()
    proc.wait()
    return proc.pid, start


def _named(base: Path, prefix: str, pid: int, start: int) -> Path:
    path = base / f"{prefix}{pid}.{start}.{rundirs._tag()}-abc123"
    path.mkdir(mode=0o700)
    return path


def test_the_name_records_the_owner(tmp_path: Path) -> None:
    made = rundirs.make("oiexec-output-")
    try:
        assert made.name.startswith(f"oiexec-output-{rundirs.owner_stamp()}-")
        assert not rundirs.stale(made.name)  # ours, alive
        assert made.stat().st_mode & 0o777 == 0o700
    finally:
        made.rmdir()
    with pytest.raises(ValueError):
        rundirs.make("something-")


def test_sweep_removes_only_dirs_of_dead_owners(tmp_path: Path) -> None:
    pid, start = _dead_pid()
    dead = _named(tmp_path, "oiexec-tmp-", pid, start)
    # A live process with a reused pid is not the owner: its start time differs.
    reused = _named(tmp_path, "oiexec-diff-", os.getppid(), 1)
    live = _named(tmp_path, "oiexec-tasks-", os.getppid(), rundirs._start_time(os.getppid()) or 0)
    mine = rundirs.make("oiexec-output-")
    foreign_tag = tmp_path / f"oiexec-tmp-{pid}.{start}.00000000-abc"
    foreign_tag.mkdir()
    unknown = tmp_path / f"other-{pid}.{start}.{rundirs._tag()}-abc"
    unknown.mkdir()
    link = tmp_path / f"oiexec-output-{pid}.{start}.{rundirs._tag()}-lnk"
    target = tmp_path / "target"
    target.mkdir()
    (target / "keep").write_text("x")
    link.symlink_to(target)
    try:
        removed = rundirs.sweep(tmp_path)
        assert sorted(removed) == sorted([dead.name, reused.name])
        assert not dead.exists() and not reused.exists()
        assert live.is_dir() and mine.is_dir() and foreign_tag.is_dir() and unknown.is_dir()
        assert link.is_symlink() and (target / "keep").exists()  # a link is not a run dir
    finally:
        mine.rmdir()


def test_removal_follows_no_link_and_opens_up_locked_dirs(tmp_path: Path) -> None:
    pid, start = _dead_pid()
    dead = _named(tmp_path, "oiexec-tmp-", pid, start)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("x")
    (dead / "0").mkdir()
    (dead / "0" / "link").symlink_to(outside)
    (dead / "0" / "file-link").symlink_to(outside / "precious")
    locked = dead / "0" / "locked" / "deeper"
    locked.mkdir(parents=True)
    (locked / "f").write_text("y")
    locked.chmod(0)
    locked.parent.chmod(0o500)
    assert rundirs.sweep(tmp_path) == [dead.name]
    assert not dead.exists()
    assert (outside / "precious").read_text() == "x"


@pytest.mark.skipif(sys.platform != "linux", reason="parent-death signal is Linux's")
def test_a_command_outlives_the_thread_that_started_it() -> None:
    """The parent-death signal follows the forking *thread*: a command started from a worker
    thread that then ends must keep running (it is forked on a long-lived thread)."""
    started: list[ProcessSession] = []
    native: list[int] = []

    def worker() -> None:
        native.append(threading.get_native_id())
        prepared = PreparedCommand(argv=["sleep", "30"], env=dict(os.environ), cwd=Path("/"))
        started.append(ProcessSession(prepared))

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    [session] = started
    try:
        # Wait until the kernel has really ended the worker thread, then look.
        deadline = time.monotonic() + 5
        while os.path.exists(f"/proc/self/task/{native[0]}") and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not os.path.exists(f"/proc/self/task/{native[0]}")
        assert alive(session.pid)
        assert session.exit_code is None
    finally:
        session.close(grace=0.0)


@pytest.mark.skipif(
    os.geteuid() != 0 or find_pids_cgroup() is None, reason="needs root and a pids cgroup"
)
def test_a_dead_runners_command_cgroup_is_emptied_at_the_next_start() -> None:
    """Landlock without signal scoping has no reaper: what a SIGKILLed root runner's command
    left in its pids cgroup is killed by the next run's `Limiter`; a live runner's is not."""
    parent = find_pids_cgroup()
    assert parent is not None
    pid, start = _dead_pid()
    dead = parent / f"oiexec-{pid}.{start}.{rundirs._tag()}-0"
    live = parent / f"oiexec-{rundirs.owner_stamp()}-999"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for cgroup in (dead, live):
            cgroup.mkdir()
            proc = subprocess.Popen(["sleep", "60"])
            procs.append(proc)
            (cgroup / "cgroup.procs").write_text(str(proc.pid))
        Limiter(SandboxLimits(max_processes=10), nproc_overhead=0, cgroup_overhead=0)
        assert procs[0].wait(timeout=5) == -9
        assert not dead.exists()
        assert procs[1].poll() is None and live.is_dir()
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
        for cgroup in (dead, live):
            deadline = time.monotonic() + 5
            while cgroup.exists() and time.monotonic() < deadline:
                with contextlib.suppress(OSError):
                    cgroup.rmdir()
