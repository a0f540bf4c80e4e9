"""Every documented exit code, through the real CLI: the code, the last event, the message."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.test_json_failures import only_failure
from tests.conftest import exec_args, run_cli
from tests.support.model_server import ModelServer, call, fault, reply


def test_success_is_0_even_when_a_command_failed(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(reply(tool_calls=[call("exec_command", {"cmd": "exit 3"})]), reply("done"))
    result = run_cli([*exec_args(model_server), "go"], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert result.items("command_execution")[0]["exit_code"] == 3
    assert result.types()[-1] == "turn.completed"


def test_provider_failure_is_1_with_turn_failed(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(fault(status=500, message="the model is on fire"))
    args = exec_args(model_server, request_max_retries=0)
    result = run_cli([*args, "go"], cwd=repo)
    assert result.returncode == 1
    last = result.events[-1]
    assert last["type"] == "turn.failed"
    assert "the model is on fire" in last["error"]["message"]
    assert "Traceback" not in result.stderr


def test_bad_request_is_not_retried(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(fault(status=400, message="unknown model gpt-x"))
    result = run_cli([*exec_args(model_server), "go"], cwd=repo)
    assert result.returncode == 1
    assert "unknown model gpt-x" in result.events[-1]["error"]["message"]
    assert len(model_server.model_requests) == 1
    assert "error" not in result.types()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["exec", "--no-such-flag", "x"], "No such option"),
        (["exec", "--full-auto", "x"], "No such option"),
        (["exec", "--max-turns", "0", "x"], "--max-turns"),
        (["exec", "--sandbox", "wide-open", "x"], "--sandbox"),
        (["frobnicate"], "No such command"),
    ],
)
def test_usage_errors_are_2(repo: Path, args: list[str], message: str) -> None:
    result = run_cli(args, cwd=repo)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr


def test_outside_git_repo_is_2_with_codex_message(tmp_path: Path) -> None:
    result = run_cli(["exec", "--json", "hello"], cwd=tmp_path)
    assert result.returncode == 2
    assert (
        "Not inside a trusted directory and --skip-git-repo-check was not specified."
        in result.stderr
    )
    assert "--skip-git-repo-check" in only_failure(result)


def test_no_prompt_on_a_tty_like_empty_stdin_is_2(repo: Path, model_server: ModelServer) -> None:
    # A usable provider: stdin is read only after the config and the key passed.
    result = run_cli([*exec_args(model_server)], cwd=repo, input="   \n")
    assert result.returncode == 2
    assert "No prompt provided via stdin." in result.stderr
    assert "No prompt provided" in only_failure(result)


def test_unreadable_output_schema_is_2(repo: Path, model_server: ModelServer) -> None:
    result = run_cli([*exec_args(model_server), "--output-schema", "missing.json", "x"], cwd=repo)
    assert result.returncode == 2
    assert "Failed to read output schema file missing.json" in result.stderr


def _write_config(oi_home: Path, text: str) -> Path:
    path = oi_home / "config.toml"
    path.write_text(text)
    return path


def test_invalid_toml_is_3_naming_file_and_line(repo: Path, oi_home: Path) -> None:
    path = _write_config(oi_home, 'model = "a"\nsandbox_mode = \n')
    result = run_cli(["exec", "x"], cwd=repo)
    assert result.returncode == 3
    assert str(path) in result.stderr and "line 2" in result.stderr
    assert "Traceback" not in result.stderr


def test_wrong_type_is_3_naming_key_file_and_line(repo: Path, oi_home: Path) -> None:
    path = _write_config(
        oi_home, 'model = "a"\n\n[sandbox_workspace_write]\nnetwork_access = "maybe"\n'
    )
    result = run_cli(["exec", "x"], cwd=repo)
    assert result.returncode == 3
    assert "sandbox_workspace_write.network_access" in result.stderr
    assert f"{path}:4" in result.stderr


def test_unknown_provider_is_3(repo: Path) -> None:
    result = run_cli(["exec", "-c", "model_provider=nowhere", "x"], cwd=repo)
    assert result.returncode == 3
    assert "Model provider `nowhere` not found" in result.stderr


def test_missing_api_key_is_3_naming_the_variable(repo: Path) -> None:
    result = run_cli(["exec", "--json", "x"], cwd=repo)
    assert result.returncode == 3
    assert "Missing environment variable: `OPENAI_API_KEY`." in result.stderr
    assert "OPENAI_API_KEY" in only_failure(result)


def test_unknown_key_warns_and_strict_config_rejects(
    repo: Path, oi_home: Path, model_server: ModelServer
) -> None:
    path = _write_config(oi_home, 'modle = "typo"\n')
    model_server.enqueue(reply("ok"))
    lenient = run_cli([*exec_args(model_server), "x"], cwd=repo)
    assert lenient.returncode == 0
    assert f"ignoring unknown config key `modle` ({path}:1)" in lenient.stderr
    strict = run_cli([*exec_args(model_server), "--strict-config", "x"], cwd=repo)
    assert strict.returncode == 3
    assert "unknown config key `modle`" in strict.stderr


def test_unknown_dash_c_key_is_tolerated(repo: Path, model_server: ModelServer) -> None:
    model_server.enqueue(reply("ok"))
    result = run_cli(
        [*exec_args(model_server), "-c", "some_sdk_key=1", "--strict-config", "x"], cwd=repo
    )
    assert result.returncode == 0, result.stderr
    assert "ignoring unknown config key `some_sdk_key`" in result.stderr


def test_max_turns_is_4_and_names_the_limit(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    model_server.enqueue(*[reply(tool_calls=[call("exec_command", {"cmd": "true"})])] * 3)
    junit = tmp_path / "junit.xml"
    result = run_cli(
        [*exec_args(model_server), "--max-turns", "2", "--junit", str(junit), "loop"], cwd=repo
    )
    assert result.returncode == 4
    assert result.events[-1]["type"] == "turn.failed"
    assert "--max-turns 2" in result.events[-1]["error"]["message"]
    assert len(model_server.model_requests) == 2
    # The class is what a CI dashboard groups by, in the event and as the failure's type;
    # which limit it was stays a property.
    assert result.events[-1]["failure_class"] == "budget"
    assert 'type="budget"' in junit.read_text()
    assert '<property name="failure_reason" value="max_turns"' in junit.read_text()


def test_timeout_is_5_and_kills_the_command(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "sleeper.pid"
    cmd = f"echo $$ > {marker}; sleep 60"
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": cmd, "yield_time_ms": 30000})])
    )
    started = time.monotonic()
    # Generous: on a loaded 2-core CI box start-up alone can take a second or two.
    result = run_cli([*exec_args(model_server), "--timeout", "5", "wait"], cwd=repo)
    elapsed = time.monotonic() - started
    assert result.returncode == 5, result.stderr
    assert elapsed < 30
    assert result.events[-1]["type"] == "turn.failed"
    assert "--timeout" in result.events[-1]["error"]["message"]
    pid = int(marker.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_timeout_interrupts_a_stalled_provider(model_server: ModelServer, repo: Path) -> None:
    from tests.support.model_server import stall

    model_server.enqueue(stall(20))
    started = time.monotonic()
    result = run_cli([*exec_args(model_server), "--timeout", "1", "x"], cwd=repo)
    assert result.returncode == 5
    assert time.monotonic() - started < 10


def test_sandbox_unavailable_is_6_and_command_not_run(
    model_server: ModelServer, repo: Path
) -> None:
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": "touch ran.txt"})]),
        reply("could not run it"),
    )
    args = [*exec_args(model_server), "-s", "workspace-write", "x"]
    result = run_cli(args, cwd=repo, env=_faults("no-userns,no-landlock"))
    assert result.returncode == 6, result.stderr
    assert not (repo / "ran.txt").exists()
    assert result.events[-1]["type"] == "turn.failed"
    assert "sandbox unavailable" in result.events[-1]["error"]["message"]
    output = next(iter(_tool_outputs(model_server)))
    assert "sandbox unavailable" in output


def _faults(names: str) -> dict[str, str]:
    """Simulated host failures (test-only hooks, honoured with the test switch)."""
    return {"OIEXEC_SANDBOX_TEST_HOOKS": "1", "OI_SANDBOX_FAULTS": names}


def _tool_outputs(server: ModelServer) -> list[str]:
    from tests.support.model_server import tool_outputs

    return [text for body in server.bodies for text in tool_outputs(body).values()]


def _start(args: list[str], cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "oiexec", *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_ends_the_turn_and_kills_children(
    model_server: ModelServer, repo: Path, tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    marker = tmp_path / "child.pid"
    cmd = f"echo $$ > {marker}; sleep 60"
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": cmd, "yield_time_ms": 30000})])
    )
    proc = _start([*exec_args(model_server), "x"], repo)
    assert proc.stdout is not None
    for line in proc.stdout:
        if json.loads(line)["type"] == "item.started":
            break
    deadline = time.monotonic() + 10
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(sig)
    rest_bytes, stderr = proc.communicate(timeout=15)
    rest = rest_bytes.decode()
    assert proc.returncode == code, stderr.decode()
    last = json.loads(rest.splitlines()[-1])
    assert last == {
        "type": "turn.failed",
        "error": {"message": f"interrupted by {sig.name}"},
        "failure_class": "interrupted",
    }
    time.sleep(0.2)
    with pytest.raises(ProcessLookupError):
        os.kill(int(marker.read_text()), 0)


def test_degraded_sandbox_is_announced(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(reply("ok"))
    args = [*exec_args(model_server), "-s", "workspace-write", "-c", "sandbox_require=any", "x"]
    result = run_cli(args, cwd=repo, env=_faults("no-userns"))
    assert result.returncode == 0, result.stderr
    assert "sandbox degraded (landlock)" in result.stderr
    warnings = [i["message"] for i in result.items("error")]
    assert any("sandbox degraded (landlock)" in w for w in warnings)


def test_unavailable_sandbox_is_announced_up_front(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(reply("nothing to run"))
    args = [*exec_args(model_server), "-s", "read-only", "x"]
    result = run_cli(args, cwd=repo, env=_faults("no-userns,no-landlock"))
    # No command was refused, so the run itself succeeds; the warning came first.
    assert result.returncode == 0, result.stderr
    assert "sandbox unavailable for `read-only`" in result.stderr
    assert result.types()[1] == "item.completed"


def test_test_only_sandbox_hooks_are_refused_in_a_real_run(
    model_server: ModelServer, repo: Path
) -> None:
    """A stray `OI_SANDBOX_FAULTS` in a CI job's environment must not quietly downgrade the
    sandbox: without the test switch the run stops with a config error naming it."""
    model_server.enqueue(reply(tool_calls=[call("exec_command", {"cmd": "touch ran.txt"})]))
    args = [*exec_args(model_server), "-s", "workspace-write", "x"]
    env = {"OI_SANDBOX_FAULTS": "no-userns", "OIEXEC_SANDBOX_TEST_HOOKS": ""}
    result = run_cli(args, cwd=repo, env=env)
    assert result.returncode == 3, result.stderr
    assert "OI_SANDBOX_FAULTS" in result.stderr and "test-only" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (repo / "ran.txt").exists()


def test_root_runner_refuses_degraded_sandbox_by_default(
    model_server: ModelServer, repo: Path
) -> None:
    """`sandbox_require = "auto"`: as root (the CI-container case) the degraded Landlock
    backend is refused unless asked for, and the warning names the ways out."""
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": "touch ran.txt"})]),
        reply("could not run it"),
    )
    args = [*exec_args(model_server), "-s", "workspace-write", "x"]
    result = run_cli(args, cwd=repo, env=_faults("no-userns"))
    if os.geteuid() == 0:
        assert result.returncode == 6, result.stderr
        assert not (repo / "ran.txt").exists()
        assert 'sandbox_require = "any"' in result.stderr
        assert "danger-full-access" in result.stderr
    else:
        assert result.returncode == 0, result.stderr
        assert "sandbox degraded (landlock)" in result.stderr
