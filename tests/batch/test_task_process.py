"""Task processes as the batch starts them: forks of the caller's zygote. A task that outlives
its timeout is killed from outside with its group; the zygote's death is a clear error for the
task in flight and the next task starts a new zygote; a long TMPDIR changes nothing (nothing
is listening on a path)."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

from oiexec.runner import launch
from oiexec.runner.batch.launcher import Child, Launcher, LaunchError
from oiexec.runner.batch.task_run import BatchContext, Children, run_child
from tests.batch.conftest import run_batch, statuses, write_tasks
from tests.support.model_server import Hang, ModelServer, reply


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _group_empty(pgid: int) -> bool:
    """No live process is left in group `pgid` (zombies do not count: whether init has reaped
    them yet is not the batch's doing)."""
    for entry in os.listdir("/proc"):
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            return False
    return True


def _argv(server: ModelServer, out: Path) -> list[str]:
    return [
        "exec",
        "--json",
        "-s",
        "danger-full-access",
        "--skip-git-repo-check",
        *server.config_args(request_max_retries=0),
        "-o",
        str(out / "last.txt"),
        "-",
    ]


def _context(out: Path, kill_grace_s: float = 30.0) -> BatchContext:
    return BatchContext(
        out=out,
        options=(),
        timeout_s=None,
        children=Children(),
        env=dict(os.environ),
        kill_grace_s=kill_grace_s,
    )


def test_a_child_outliving_its_timeout_is_killed_with_its_group(
    tmp_path: Path, model_server: ModelServer
) -> None:
    model_server.enqueue(Hang(60))  # the model never answers: the task would run on
    ctx = _context(tmp_path, kill_grace_s=0.3)
    started_tasks: list[Child] = []

    class Recording(Launcher):
        def start(self, *args: Any, **kwargs: Any) -> Child:
            started_tasks.append(super().start(*args, **kwargs))
            return started_tasks[-1]

    ctx.launcher = Recording()
    started = time.monotonic()

    code, killed = run_child(
        _argv(model_server, tmp_path), "the prompt", ctx, tmp_path, timeout=0.5, append=False
    )

    assert time.monotonic() - started < 20
    assert code == -signal.SIGKILL
    assert killed == "killed: still running 0.3s after its 0.5s timeout"
    (task,) = started_tasks
    assert _group_empty(task.pid)


def test_the_zygote_dying_under_a_task_is_an_error_and_the_next_task_starts_a_new_one(
    tmp_path: Path, model_server: ModelServer
) -> None:
    model_server.enqueue(Hang(60))
    ctx = _context(tmp_path)
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(
                run_child(
                    _argv(model_server, tmp_path),
                    "the prompt",
                    ctx,
                    tmp_path,
                    timeout=None,
                    append=False,
                )
            )
        except LaunchError as exc:
            outcome.append(exc)

    runner = threading.Thread(target=run)
    runner.start()
    deadline = time.monotonic() + 30
    while not model_server.requests and time.monotonic() < deadline:
        time.sleep(0.02)  # the task is in flight once the model is asked
    assert model_server.requests, "the task never reached the model"
    # Its stdin in (the prompt reached the model), its stdout kept (the run's first event).
    assert any("the prompt" in str(body) for body in model_server.bodies)
    assert '"thread.started"' in (tmp_path / "events.jsonl").read_text()
    zygote = launch._shared
    assert zygote is not None
    (task,) = list(ctx.children._procs)
    os.kill(zygote.pid, signal.SIGKILL)
    runner.join(30)

    assert not runner.is_alive()
    (error,) = outcome
    assert isinstance(error, LaunchError), error
    assert f"launcher (pid {zygote.pid}) was killed by SIGKILL" in error.message
    assert "while the run was going" in error.message
    # The task was stopped with it (its parent-death signal), its group too. (Its files are
    # closed a moment before it is gone.)
    deadline = time.monotonic() + 10
    while _alive(task.pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(task.pid) and _group_empty(task.pid)

    model_server.enqueue(reply("done"))
    (tmp_path / "again").mkdir()
    code, killed = run_child(
        _argv(model_server, tmp_path / "again"), "p", ctx, tmp_path / "again", timeout=None,
        append=False,
    )  # fmt: skip
    assert (code, killed) == (0, None)
    assert launch._shared is not None and launch._shared.pid != zygote.pid


def test_a_long_tmpdir_does_not_break_batch(
    tmp_path: Path, model_server: ModelServer, repo: Path
) -> None:
    # 200 characters: far past the 107 bytes of a Unix socket's path, where the fork server
    # of old failed every task in 0.0 s without a word.
    tmpdir = tmp_path / "t"
    tmpdir = tmpdir / ("d" * (200 - len(str(tmpdir)) - 1))
    tmpdir.mkdir(parents=True)
    assert len(str(tmpdir)) == 200
    model_server.route("TASK-A", reply("a done"))
    model_server.route("TASK-B", reply("b done"))
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [{"id": "a", "prompt": "TASK-A"}, {"id": "b", "prompt": "TASK-B"}],
    )

    result = run_batch(
        model_server, tasks, tmp_path / "out", "--jobs", "2", cwd=repo, env={"TMPDIR": str(tmpdir)}
    )

    assert result.returncode == 0, result.stderr
    assert statuses(tmp_path / "out") == {"a": "success", "b": "success"}
