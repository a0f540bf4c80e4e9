"""A task process that outlives its timeout is killed from outside, with everything it
started: a hung task never holds up the batch. The process is forked from the batch's
preloaded server, as every task is."""

from __future__ import annotations

import time
from pathlib import Path

from oiexec.runner.batch.task_run import BatchContext, Children, run_child


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_child_outliving_its_timeout_is_killed_with_its_group(tmp_path: Path) -> None:
    ctx = BatchContext(
        out=tmp_path, options=(), timeout_s=None, children=Children(), kill_grace_s=0.3
    )
    pid_file = tmp_path / "grandchild.pid"
    command = ("tests.batch.hang_task", [str(pid_file)])
    started = time.monotonic()

    code, killed = run_child(command, "the prompt", ctx, tmp_path, timeout=0.5, append=False)

    assert time.monotonic() - started < 10
    assert code < 0
    assert killed == "killed: still running 0.3s after its 0.5s timeout"
    assert (tmp_path / "events.jsonl").read_text() == "the prompt\n"  # stdin in, stdout kept
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)
