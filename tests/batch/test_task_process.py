"""A task process that outlives its timeout is killed from outside, with everything it
started: a hung task never holds up the batch."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from oiexec.runner.batch.task_run import BatchContext, Children, run_child

# Ignores SIGTERM, starts a grandchild in its group, and never ends on its own.
_HANG = (
    "import signal, subprocess, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "child = subprocess.Popen(['sleep', '60'])\n"
    "open(sys.argv[1], 'w').write(str(child.pid))\n"
    "print(sys.stdin.read(), flush=True)\n"
    "time.sleep(60)\n"
)


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
    argv = [sys.executable, "-c", _HANG, str(pid_file)]
    started = time.monotonic()

    code, killed = run_child(argv, "the prompt", ctx, tmp_path, timeout=0.5, append=False)

    assert time.monotonic() - started < 10
    assert code < 0
    assert killed == "killed: still running 0.3s after its 0.5s timeout"
    assert (tmp_path / "events.jsonl").read_text() == "the prompt\n"  # stdin in, stdout kept
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)
