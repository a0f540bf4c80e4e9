"""A batch stopped with SIGTERM ends its running tasks cleanly and reports what finished; a
rerun with the same --out runs only the tasks that did not finish."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.batch.conftest import batch_args, requests_for, run_batch, statuses, write_tasks
from tests.support.model_server import ModelServer, reply, stall


def _wait_for(predicate: object, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the batch")
        time.sleep(0.05)


def test_sigterm_stops_the_batch_and_a_rerun_runs_only_unfinished_tasks(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [
            {"id": "quick", "prompt": "quick one [task:quick]", "repo": str(repo)},
            {"id": "slow", "prompt": "slow one [task:slow]", "repo": str(repo)},
            {"id": "later", "prompt": "later one [task:later]", "repo": str(repo)},
        ],
    )
    server = model_server
    server.route("[task:quick]", reply("quick done"))
    server.route("[task:slow]", stall(3.0, reply=reply("too late")))
    out = tmp_path / "out"
    # One at a time: `slow` is running when the signal comes, `later` has not started.
    proc = subprocess.Popen(
        [sys.executable, "-m", "oiexec", *batch_args(server, tasks, out, "--jobs", "1")],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ),
    )
    _wait_for(
        lambda: (out / "quick" / "result.json").is_file() and requests_for(server, "[task:slow]")
    )
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=30)

    assert proc.returncode == 130, stderr.decode()
    assert statuses(out) == {"quick": "success", "slow": "interrupted", "later": "not_run"}
    assert json.loads((out / "summary.json").read_text())["exit_code"] == 130
    assert not (out / "slow" / "result.json").exists()
    assert "SIGTERM" in stderr.decode()
    # The task's own run ended as an interrupt (exit 130, session closed), not killed.
    assert "interrupted" in (out / "slow" / "stderr.log").read_text()

    before = {m: requests_for(server, m) for m in ("[task:quick]", "[task:slow]", "[task:later]")}
    server.route("[task:slow]", reply("slow done"))
    server.route("[task:later]", reply("later done"))
    rerun = run_batch(server, tasks, out, "--jobs", "2", cwd=tmp_path)

    assert rerun.returncode == 0, rerun.stderr
    assert statuses(out) == {"quick": "success", "slow": "success", "later": "success"}
    after = {m: requests_for(server, m) for m in before}
    assert after == {
        "[task:quick]": before["[task:quick]"],
        "[task:slow]": before["[task:slow]"] + 1,
        "[task:later]": before["[task:later]"] + 1,
    }
    assert "quick: success (finished in an earlier run)" in rerun.stderr


def test_a_batch_killed_outright_does_not_leave_its_tasks_running(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    """kill -9 (an OOM kill, a runner that does not wait) gives the batch no chance to stop its
    tasks: each task ends itself as a SIGTERM'd run would, instead of waiting on the model."""
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [{"id": "stuck", "prompt": "stuck [task:stuck]", "repo": str(repo)}],
    )
    model_server.route("[task:stuck]", stall(60.0, reply=reply("far too late")))
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "oiexec", *batch_args(model_server, tasks, out)],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ),
    )
    _wait_for(lambda: requests_for(model_server, "[task:stuck]"))
    proc.kill()
    proc.wait(timeout=10)
    events = out / "stuck" / "events.jsonl"
    _wait_for(lambda: events.is_file() and '"turn.failed"' in events.read_text())
    last = json.loads(events.read_text().splitlines()[-1])
    assert last == {
        "type": "turn.failed",
        "error": {"message": "interrupted by SIGTERM"},
        "failure_class": "interrupted",
    }
