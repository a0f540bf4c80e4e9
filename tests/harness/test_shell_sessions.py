"""Shell state and background commands: SWE-agent's persistent shell (cd and exports carry
over, a timeout restarts it, close kills it), mini-swe-agent's fresh subshell per action,
and background commands with their output/stop tools, cleaned up at the end of the run."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from oiexec.tools.adapters.persistent import PersistentShell
from oiexec.tools.process import group_alive
from tests.conftest import exec_args, run_cli
from tests.harness.conftest import HarnessFactory, Workspace, run_tool
from tests.support.model_server import ModelServer, call, reply


def _commands(ws: Workspace) -> list[dict[str, object]]:
    return ws.items("command_execution")


# --- persistent shell (swe-agent) ---------------------------------------------------------


def test_swe_agent_bash_keeps_cwd_and_exports(
    make_harness: HarnessFactory, workspace: Workspace
) -> None:
    (workspace.root / "sub").mkdir()
    harness = make_harness("swe-agent")
    run_tool(harness, workspace, "bash", {"command": "cd sub && export OI_FOO=bar"})
    out = run_tool(harness, workspace, "bash", {"command": 'pwd; echo "foo=$OI_FOO"'})
    assert out.output.splitlines() == [str(workspace.root / "sub"), "foo=bar"]
    failed = run_tool(harness, workspace, "bash", {"command": "false"})
    assert failed.is_error
    statuses = [c["status"] for c in _commands(workspace)]
    assert statuses == ["completed", "completed", "failed"]
    assert "foo=bar" in str(_commands(workspace)[1]["aggregated_output"])


def test_swe_agent_pager_env_reaches_the_persistent_shell(
    make_harness: HarnessFactory, workspace: Workspace
) -> None:
    harness = make_harness("swe-agent")
    out = run_tool(harness, workspace, "bash", {"command": "echo $GIT_PAGER/$TQDM_DISABLE"})
    assert out.output.strip() == "cat/1"


def test_persistent_shell_timeout_restarts_with_a_clear_message(workspace: Workspace) -> None:
    shell = PersistentShell(workspace.ctx, shell="/bin/bash", env=dict(workspace.ctx.env))
    try:
        shell.run("export OI_KEEP=1; cd /tmp", 5)
        first_pid = shell.pid
        assert first_pid is not None
        started = time.monotonic()
        outcome = shell.run("echo before; sleep 20", 0.5)
        assert time.monotonic() - started < 5
        assert outcome.timed_out and outcome.exit_code is None
        assert "before" in outcome.output
        assert any("timed out after 0.5 seconds" in n and "new shell" in n for n in outcome.notes)
        assert not group_alive(first_pid)
        after = shell.run('echo "keep=$OI_KEEP"; pwd', 5)
        assert after.output.splitlines() == ["keep=", str(workspace.root)]
        assert shell.pid != first_pid
    finally:
        shell.close()


def test_persistent_shell_survives_exit_and_close_kills_it(workspace: Workspace) -> None:
    shell = PersistentShell(workspace.ctx, shell="/bin/bash", env=dict(workspace.ctx.env))
    outcome = shell.run("echo bye; exit 3", 5)
    assert outcome.exit_code == 3 and "bye" in outcome.output
    assert any("shell exited" in n for n in outcome.notes)
    assert shell.run("echo again", 5).output == "again\n"
    pid = shell.pid
    assert pid is not None and group_alive(pid)
    shell.close()
    assert not group_alive(pid)
    assert shell.run("echo x", 5).refused is not None


def test_harness_close_kills_the_persistent_shell(
    make_harness: HarnessFactory, workspace: Workspace
) -> None:
    harness = make_harness("swe-agent")
    run_tool(harness, workspace, "bash", {"command": "sleep 60 &"})
    shell = harness.runtime.extras["persistent_shell"]
    assert isinstance(shell, PersistentShell) and shell.pid is not None
    pid = shell.pid
    harness.close()
    assert not group_alive(pid)


def test_mini_swe_agent_runs_each_action_in_a_fresh_subshell(
    make_harness: HarnessFactory, workspace: Workspace
) -> None:
    (workspace.root / "sub").mkdir()
    harness = make_harness("mini-swe-agent")
    run_tool(harness, workspace, "bash", {"command": "cd sub && export OI_FOO=bar"})
    out = run_tool(harness, workspace, "bash", {"command": 'pwd; echo "foo=$OI_FOO"'})
    assert json.loads(out.output)["output"] == f"{workspace.root}\nfoo=\n"


# --- background commands -----------------------------------------------------------------


def _task_id(text: str) -> str:
    match = re.search(r"(?:ID: |task_id: |task )([\w-]+)", text)
    assert match, text
    return match.group(1).rstrip(".")


def test_claude_background_bash_then_task_output(
    make_harness: HarnessFactory, workspace: Workspace
) -> None:
    harness = make_harness("claude-code")
    started = run_tool(
        harness,
        workspace,
        "Bash",
        {"command": "sleep 0.3; echo from-bg", "run_in_background": True},
    )
    assert started.output.startswith("Command running in background with ID: b")
    task_id = _task_id(started.output)
    assert not _commands(workspace), "the item completes only when the command ends"
    out = run_tool(
        harness, workspace, "TaskOutput", {"task_id": task_id, "block": True, "timeout": 10000}
    )
    assert "<status>completed</status>" in out.output
    assert "<exit_code>0</exit_code>" in out.output and "from-bg" in out.output
    [item] = _commands(workspace)
    assert item["status"] == "completed" and "from-bg" in str(item["aggregated_output"])
    path = Path(started.output.rsplit("written to: ", 1)[1])
    assert path.read_text() == "from-bg\n"
    harness.close()
    assert not path.exists()


def test_claude_task_output_without_blocking_and_task_stop(
    make_harness: HarnessFactory, workspace: Workspace
) -> None:
    harness = make_harness("claude-code")
    started = run_tool(
        harness, workspace, "Bash", {"command": "echo up; sleep 60", "run_in_background": True}
    )
    task_id = _task_id(started.output)
    tasks = harness.runtime.extras["background"]
    pid = tasks.get(task_id).session.pid
    time.sleep(0.2)
    peek = run_tool(
        harness, workspace, "TaskOutput", {"task_id": task_id, "block": False, "timeout": 0}
    )
    assert "<retrieval_status>timeout</retrieval_status>" in peek.output
    assert "<status>running</status>" in peek.output and "up" in peek.output
    stopped = run_tool(harness, workspace, "TaskStop", {"task_id": task_id})
    assert stopped.output == f"Successfully stopped task: {task_id} (echo up; sleep 60)"
    assert not group_alive(pid)
    [item] = _commands(workspace)
    assert item["status"] == "failed"
    again = run_tool(harness, workspace, "TaskStop", {"task_id": task_id})
    assert again.is_error and "not running" in again.output
    missing = run_tool(harness, workspace, "TaskStop", {"task_id": "nope"})
    assert missing.is_error and "No background task" in missing.output


@pytest.mark.parametrize(
    ("harness_id", "shell_tool", "flag", "extra"),
    [
        ("kimi-code", "Bash", "run_in_background", {"description": "sleeper"}),
        ("kimi-cli", "Shell", "run_in_background", {"description": "sleeper"}),
        ("qwen-code", "run_shell_command", "is_background", {}),
        ("deepseek-tui", "exec_shell", "background", {}),
        ("claude-code-bare", "Bash", "run_in_background", {}),
    ],
)
def test_background_commands_are_killed_at_close(
    make_harness: HarnessFactory,
    workspace: Workspace,
    harness_id: str,
    shell_tool: str,
    flag: str,
    extra: dict[str, object],
) -> None:
    harness = make_harness(harness_id)
    started = time.monotonic()
    out = run_tool(harness, workspace, shell_tool, {"command": "sleep 60", flag: True, **extra})
    assert time.monotonic() - started < 5, "a background command must not block the call"
    assert not out.is_error, out.output
    [task] = harness.runtime.extras["background"].running()
    assert task.task_id in out.output
    harness.close()
    assert not group_alive(task.session.pid)
    [item] = _commands(workspace)
    assert item["status"] == "failed" and item["command"].endswith("'sleep 60'")


def test_kimi_background_needs_a_description(
    make_harness: HarnessFactory, workspace: Workspace
) -> None:
    harness = make_harness("kimi-code")
    out = run_tool(harness, workspace, "Bash", {"command": "sleep 1", "run_in_background": True})
    assert out.is_error and "description" in out.output
    assert not _commands(workspace)


def test_kimi_task_output_and_stop(make_harness: HarnessFactory, workspace: Workspace) -> None:
    harness = make_harness("kimi-code")
    out = run_tool(
        harness,
        workspace,
        "Bash",
        {"command": "echo hi-kimi", "run_in_background": True, "description": "greet"},
    )
    task_id = _task_id(out.output)
    polled = run_tool(harness, workspace, "TaskOutput", {"task_id": task_id, "timeout": 10})
    assert polled.output.startswith(f"<system>Task {task_id} is completed, exit code 0.</system>")
    assert "hi-kimi" in polled.output


def test_deepseek_wait_and_cancel_all(make_harness: HarnessFactory, workspace: Workspace) -> None:
    harness = make_harness("deepseek-tui")
    first = run_tool(harness, workspace, "exec_shell", {"command": "sleep 60", "background": True})
    quick = run_tool(harness, workspace, "exec_shell", {"command": "exit 4", "background": True})
    ended = run_tool(
        harness,
        workspace,
        "exec_shell_wait",
        {"task_id": _task_id(quick.output), "wait": True, "timeout_ms": 10000},
    )
    assert ended.output.startswith(f"Task {_task_id(quick.output)}: failed (exit code: 4)")
    task_id = _task_id(first.output)
    waited = run_tool(harness, workspace, "exec_shell_wait", {"task_id": task_id, "wait": False})
    assert waited.output.startswith(f"Task {task_id}: running")
    cancelled = run_tool(harness, workspace, "exec_shell_cancel", {"all": True})
    assert cancelled.output == "Stopped 1 background task(s)."
    statuses = sorted((c["exit_code"], c["status"]) for c in _commands(workspace))
    assert [s for _, s in statuses] == ["failed", "failed"]
    assert 4 in [code for code, _ in statuses]


def test_background_items_complete_before_the_run_ends(
    model_server: ModelServer, repo: Path
) -> None:
    """Through the CLI: a background command still running at the final answer is killed
    and its item completed before `turn.completed`; the output tool sees a finished one."""
    model_server.enqueue(
        reply(
            tool_calls=[
                call("Bash", {"command": "sleep 60", "run_in_background": True}, call_id="c1"),
                call("Bash", {"command": "echo quick", "run_in_background": True}, call_id="c2"),
            ]
        ),
        lambda body: reply(
            tool_calls=[
                call(
                    "TaskOutput",
                    {"task_id": _ids(body)[1], "block": True, "timeout": 10000},
                    call_id="c3",
                )
            ]
        ),
        reply("done"),
    )
    result = run_cli(
        [*exec_args(model_server, wire="chat"), "-c", 'harness="claude-code"', "go"], cwd=repo
    )
    assert result.returncode == 0, result.stderr
    outputs = [m for m in model_server.bodies[-1]["messages"] if m["role"] == "tool"]
    assert "quick" in json.dumps(outputs[-1]) and "<status>completed</status>" in json.dumps(
        outputs[-1]
    )
    types = [e["type"] for e in result.events]
    done = [e["item"] for e in result.events if e["type"] == "item.completed"]
    commands = [i for i in done if i["type"] == "command_execution"]
    assert sorted(c["status"] for c in commands) == ["completed", "failed"]
    last_command = max(i for i, e in enumerate(result.events) if e.get("item") in commands)
    assert last_command < types.index("turn.completed")
    started = [e for e in result.events if e["type"] == "item.started"]
    assert len(started) == 2


def _ids(body: dict[str, object]) -> list[str]:
    texts = json.dumps(body)
    return re.findall(r"background with ID: (b\w+)", texts)
