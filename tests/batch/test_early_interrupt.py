"""SIGINT early in a batch (start-up, worktrees being made, tasks being started) ends every
task and its commands and exits 130 at once: not after the 10 s grace, and nothing left
running. Interrupted later, the same."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from oiexec.runner.launch import Child
from tests.batch.conftest import batch_args, write_tasks
from tests.support.model_server import ModelServer, call, reply

#: Well under the batch's 10 s grace: a batch that waited it out fails here even on a loaded
#: machine, where ending promptly takes about a second.
_PROMPT_S = 8.0
_COMMAND = "sleep 47.25"


def _wait_for(predicate: Callable[[], object], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the batch")
        time.sleep(0.01)


def _processes_under(directory: Path) -> list[str]:
    """Processes whose working directory lies in `directory`: a batch's zygote and tasks
    (started there) and the commands they run (in the task's worktree, inside --out)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue  # gone, or not ours
        if cwd == str(directory) or cwd.startswith(f"{directory}/"):
            found.append(f"{pid}: {cmdline.decode(errors='replace')[:120]}")
    return found


def _task_logs(out: Path) -> str:
    """Each task's own stderr: where a task that did not end in time says why (a run whose
    clean-up hangs after SIGTERM writes every thread's stack there, `runner/signals.py`)."""
    return "\n".join(
        f"--- {log}:\n{log.read_text(errors='replace')[-6000:]}"
        for log in sorted(out.glob("*/stderr.log"))
    )


def _command_running(directory: Path) -> bool:
    return any(_COMMAND in line for line in _processes_under(directory))


@pytest.mark.parametrize("moment", ["out dir made", "worktree made", "task started", "command"])
def test_sigint_at_any_moment_ends_the_batch_and_every_task_promptly(
    model_server: ModelServer, repo: Path, tmp_path: Path, moment: str
) -> None:
    ids = ["t1", "t2", "t3"]
    for task_id in ids:
        model_server.route(
            f"[task:{task_id}]",
            reply(tool_calls=[call("exec_command", {"cmd": _COMMAND})]),
            reply("done"),
        )
    work = tmp_path / "work"
    work.mkdir()
    tasks = write_tasks(
        work / "tasks.jsonl",
        [{"id": i, "prompt": f"do [task:{i}]", "repo": str(repo)} for i in ids],
    )
    out = work / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "oiexec", *batch_args(model_server, tasks, out, "--jobs", "3")],
        cwd=work,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ),
        start_new_session=True,  # Ctrl-C reaches the batch alone, as `kill -INT` does
    )
    try:
        ready: dict[str, Callable[[], object]] = {
            "out dir made": lambda: (out / "shard.json").exists(),
            "worktree made": lambda: (out / "t1" / "worktree").exists(),
            "task started": lambda: (out / "t1" / "events.jsonl").exists(),
            "command": lambda: _command_running(work),
        }
        _wait_for(ready[moment])
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = err.decode()
    assert proc.returncode == 130, stderr
    assert took < _PROMPT_S, f"{took:.1f}s to stop:\n{stderr}\n{_task_logs(out)}"
    assert "Traceback" not in stderr and "SIGINT" in stderr
    # Every task process and command is gone (the zygote follows its batch at once).
    _wait_for(lambda: not _processes_under(work), timeout=_PROMPT_S)
    summary_file = out / "summary.json"
    if summary_file.exists():  # not when the signal came before the tasks were planned
        summary = json.loads(summary_file.read_text())
        assert summary["exit_code"] == 130
        outcomes = {t["id"]: (t["status"], t["exit_code"], t["message"]) for t in summary["tasks"]}
        assert {status for status, _, _ in outcomes.values()} <= {"interrupted", "not_run"}, (
            outcomes,
            stderr,
        )
        assert not any((out / i / "result.json").exists() for i in ids)  # a rerun runs them
    else:
        assert "stopped while starting up; no task was started" in stderr
    if moment == "command":
        assert "3 task(s) under way asked to end, 0 not started" in stderr


def test_a_signal_reaches_a_task_that_has_not_made_its_process_group_yet() -> None:
    """The race behind the early-SIGINT bug: a task's pid is known before the child's
    `setsid()`, and `killpg` then finds no group and the signal was lost."""
    child = subprocess.Popen(["sleep", "30"])  # in this process's group, like a fresh fork

    class _Zygote:  # what a Child needs of its zygote: the lock its state is kept under
        lock = threading.Lock()

    task = Child(_Zygote(), -1)  # type: ignore[arg-type]
    with task._cond:  # as the zygote's reader reports it, under the lock
        task._started(child.pid)
    try:
        task.signal(signal.SIGTERM)
        assert child.wait(10) == -signal.SIGTERM
        with task._cond:
            task._exited(-signal.SIGTERM)
        task.signal(signal.SIGKILL)  # ended: its pid is no longer signalled (nor an error)
    finally:
        child.kill()
        child.wait()
