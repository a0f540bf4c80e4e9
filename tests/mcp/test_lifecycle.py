"""Servers start with the run and never outlive it: a required one that fails stops the run
before the turn (exit 3), an optional one is reported and skipped; the server and what it
spawned are gone after a normal end, SIGTERM and `--timeout`; its stderr goes to the run
log; it gets no provider key."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import exec_args, run_cli
from tests.mcp.conftest import gone_soon, read_pid, run_log, server_flags
from tests.support.model_server import ModelServer, call, hang, reply


def test_required_servers_that_fail_stop_the_run_before_the_turn(
    model_server: ModelServer, repo: Path
) -> None:
    flags = [
        *server_flags("db", "--exit", "4", required=True),
        *server_flags("search", "--hang", required=True, startup_timeout_sec=0.5),
    ]
    result = run_cli([*exec_args(model_server), *flags, "go"], cwd=repo)
    assert result.returncode == 3, result.stderr
    assert "turn.started" not in result.types()
    message = result.events[-1]["error"]["message"]
    assert message.startswith("required MCP servers failed to start: `db`: exited with code 4")
    assert "mini: refusing to start" in message  # the server's own last words
    assert "`search`: timed out after 0.5 s (startup_timeout_sec)" in message
    assert "required = false" in message
    assert model_server.model_requests == []
    assert "Traceback" not in result.stderr


def test_after_a_run_nothing_is_left_stderr_is_logged_no_key_leaks(
    model_server: ModelServer, repo: Path, tmp_path: Path, oi_home: Path
) -> None:
    pidfile, childfile, envfile = (
        tmp_path / "server.pid",
        tmp_path / "child.pid",
        tmp_path / "env.json",
    )
    model_server.enqueue(
        reply(tool_calls=[call("mcp__mini__spawn", {"pidfile": str(childfile)})]), reply("done")
    )
    flags = server_flags(
        "mini",
        "--pidfile",
        str(pidfile),
        "--envfile",
        str(envfile),
        "--noise",  # a non-JSON line on stdout: the SDK's complaint goes to the log too
        env_vars=["PASSED_THROUGH"],
        env={"LITERAL": "yes"},
    )
    broken = server_flags("broken", command="no-such-server-binary")
    args = exec_args(model_server, env_key="SCRIPTED_API_KEY")
    result = run_cli(
        [*args, *flags, *broken, "go"],
        cwd=repo,
        env={
            "SCRIPTED_API_KEY": "sk-secret-key",
            "OPENAI_API_KEY": "sk-other",
            "PASSED_THROUGH": "1",
        },
    )
    assert result.returncode == 0, result.stderr
    # An optional server that fails is a warning; Codex reports MCP startup outside the
    # JSON stream, so there is no item and the item ids stay Codex's.
    assert "MCP client for `broken` failed to start: command `no-such-server-binary` not found" in (
        result.stderr
    )
    assert result.items("error") == [] and result.items("mcp_tool_call")[0]["id"] == "item_0"
    assert "mcp__broken" not in str(model_server.bodies[0])
    assert gone_soon(read_pid(pidfile))
    assert gone_soon(read_pid(childfile))  # the server's own child, not just the server
    env = json.loads(envfile.read_text())
    assert "SCRIPTED_API_KEY" not in env and "OPENAI_API_KEY" not in env
    assert env["PASSED_THROUGH"] == "1" and env["LITERAL"] == "yes"
    assert "mini: starting in" not in result.stderr
    assert "mini: starting in" in run_log(oi_home)
    assert "Failed to parse JSONRPC message" in run_log(oi_home)
    assert "Failed to parse" not in result.stderr and "Traceback" not in result.stderr


def _start(args: list[str], cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "oiexec", *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _wait_for(path: Path, within: float = 20.0) -> None:
    deadline = time.monotonic() + within
    while not (path.exists() and path.read_text()):
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


@pytest.mark.parametrize("ending", ["sigterm", "timeout"])
def test_servers_are_gone_after_sigterm_and_timeout(
    model_server: ModelServer, repo: Path, tmp_path: Path, ending: str
) -> None:
    pidfile, childfile = tmp_path / "server.pid", tmp_path / "child.pid"
    model_server.enqueue(
        reply(tool_calls=[call("mcp__mini__spawn", {"pidfile": str(childfile)})]), hang(60)
    )
    # Long enough for the server to start and run its tool on a loaded machine (at 6 s, six
    # workers on two cores once left the run timing out before the tool had run); the hung
    # model request must not reach its own idle limit first.
    extra = ["--timeout", "12"] if ending == "timeout" else []
    flags = server_flags("mini", "--pidfile", str(pidfile))
    args = exec_args(model_server, stream_idle_timeout_ms=60_000)
    proc = _start([*args, *extra, *flags, "go"], repo)
    try:
        _wait_for(childfile)
        if ending == "sigterm":
            proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
    finally:
        proc.kill()
        proc.communicate()
    assert code == (143 if ending == "sigterm" else 5)
    assert gone_soon(read_pid(pidfile))
    assert gone_soon(read_pid(childfile))


def test_sigterm_while_a_server_is_still_starting(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "server.pid"
    flags = server_flags("slow", "--hang", "--pidfile", str(pidfile), startup_timeout_sec=60)
    proc = _start([*exec_args(model_server), *flags, "go"], repo)
    try:
        _wait_for(pidfile)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
        out = proc.communicate()[0].decode()
    finally:
        proc.kill()
    assert code == 143
    assert json.loads(out.splitlines()[-1])["error"]["message"] == "interrupted by SIGTERM"
    assert gone_soon(read_pid(pidfile))
    assert model_server.model_requests == []
