"""Resource limits hold in both backends, as root and as nobody: a bounded fork bomb stops at
`max_processes`, a write past `max_file_size` fails, a busy loop dies at `max_cpu_seconds`."""

from __future__ import annotations

from pathlib import Path

import pytest

from oiexec.core.policy import SandboxLimits, SandboxPolicy
from oiexec.sandbox import diagnosis, limits
from tests.sandbox.conftest import BACKENDS, PYTHON, SANDBOXED_MODES, Box
from tests.sandbox.support import run_exec
from tests.support.model_server import ModelServer, call, reply, tool_outputs

# Forks up to 500 sleepers (never more: an unbounded bomb would take the test host down),
# counting how many forks the kernel refused.
_BOMB = """
import os, time
made = refused = 0
for _ in range(500):
    try:
        pid = os.fork()
    except BlockingIOError:
        refused += 1
        break
    if pid == 0:
        time.sleep(5)
        os._exit(0)
    made += 1
print(f"made={made} refused={refused}", flush=True)
"""


def _bomb_result(output: str) -> tuple[int, int]:
    line = next(x for x in output.splitlines() if x.startswith("made="))
    made, refused = (int(part.split("=")[1]) for part in line.split())
    return made, refused


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", SANDBOXED_MODES)
def test_fork_bomb_stops_at_max_processes(box: Box, backend: str, mode: str) -> None:
    (box.ws / "bomb.py").write_text(_BOMB)
    extra = ["--max-processes", "50"]
    result = box.run(mode, f"{PYTHON} {box.ws / 'bomb.py'}", backend=backend, extra=extra)
    made, refused = _bomb_result(result.stdout)
    assert refused == 1, result.stdout + result.stderr
    # RLIMIT_NPROC of a non-root runner counts the uid's other tasks as they were when the
    # command started; they may end meanwhile, so allow some slack above 50.
    assert made < 150, result.stdout


@pytest.mark.parametrize("backend", BACKENDS)
def test_write_past_max_file_size_fails(box: Box, backend: str) -> None:
    script = "head -c 2000000 /dev/zero > big; echo rc=$?"
    extra = ["--max-file-size-mb", "1"]
    result = box.run("workspace-write", script, backend=backend, extra=extra)
    assert "rc=0" not in result.stdout, result.stdout + result.stderr
    assert (box.ws / "big").stat().st_size <= 1024 * 1024
    # Python ignores SIGXFSZ, so there the write fails with EFBIG instead.
    code = "open('big2', 'wb').write(bytes(2000000))"
    result = box.run("workspace-write", f'{PYTHON} -c "{code}"', backend=backend, extra=extra)
    assert "File too large" in result.stderr or "File too large" in result.stdout, result


@pytest.mark.parametrize("backend", BACKENDS)
def test_busy_loop_dies_at_max_cpu_seconds(box: Box, backend: str) -> None:
    code = "import time\nt = time.time()\nwhile time.time() - t < 8: pass\nprint('survived')"
    (box.ws / "spin.py").write_text(code)
    extra = ["--max-cpu-seconds", "1"]
    result = box.run("read-only", f"{PYTHON} {box.ws / 'spin.py'}", backend=backend, extra=extra)
    assert "survived" not in result.stdout
    assert result.returncode in (128 + 24, 128 + 9), result  # SIGXCPU, else SIGKILL at hard


@pytest.mark.parametrize("backend", BACKENDS)
def test_exec_fork_bomb_stops_at_max_processes(
    box: Box, model_server: ModelServer, backend: str
) -> None:
    (box.ws / "bomb.py").write_text(_BOMB)
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": f"{PYTHON} {box.ws / 'bomb.py'}"})]),
        reply("done"),
    )
    extra = ["-c", "sandbox_limits.max_processes=50"]
    result = run_exec(box, model_server, "workspace-write", backend, extra)
    assert result["code"] == 0, result["stderr"]
    [output] = tool_outputs(model_server.bodies[-1]).values()
    made, refused = _bomb_result(output)
    assert refused == 1 and made < 150, output


# --- units ---------------------------------------------------------------------------


def test_root_without_a_pids_cgroup_reports_the_gap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(diagnosis.os, "geteuid", lambda: 0)
    monkeypatch.setattr(diagnosis, "find_pids_cgroup", lambda: None)
    limited = SandboxPolicy("workspace-write", tmp_path, limits=SandboxLimits(max_processes=50))
    assert any("not enforced" in line for line in diagnosis.process_limit_gap(limited))
    unlimited = SandboxPolicy("workspace-write", tmp_path, limits=SandboxLimits(max_processes=None))
    assert diagnosis.process_limit_gap(unlimited) == []


def test_non_root_nproc_is_counted_from_the_uid_s_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(limits, "own_tasks", lambda: 40)
    limiter = limits.Limiter(SandboxLimits(max_processes=50), nproc_overhead=3, cgroup_overhead=0)
    prepared = limiter.prepare()
    nproc = [r for r in prepared._rlimits if r[0] == limits.resource.RLIMIT_NPROC]
    assert nproc and nproc[0][1] <= 93 and nproc[0][1] == nproc[0][2]
    assert prepared.release(kill=True) == []


def test_own_tasks_counts_this_process() -> None:
    assert limits.own_tasks() >= len(list(Path("/proc/self/task").iterdir()))
