"""Hooks in Codex's shape: a PreToolUse hook refusing a command, PostToolUse in the run log,
SessionStart context, a timeout reported, a Stop hook sending the model back, and project
hooks ignored in an untrusted project."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from tests.cli.test_json_failures import only_failure
from tests.conftest import exec_args, run_cli
from tests.extensions.conftest import command_hook, trust, write_hooks
from tests.support.model_server import ModelServer, call, reply, tool_outputs

GUARD = """\
import json, sys
payload = json.load(sys.stdin)
with open(sys.argv[1], "a") as log:
    log.write(json.dumps(payload) + "\\n")
if "rm " in payload["tool_input"].get("command", ""):
    print("deleting files is not allowed here", file=sys.stderr)
    sys.exit(1)
"""


def _script(tmp_path: Path, name: str, source: str) -> str:
    path = tmp_path / name
    path.write_text(source)
    return f"{sys.executable} {path}"


def _run_log(oi_home: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for path in sorted((oi_home / "logs").glob("oiexec-*.log"))
        for line in path.read_text().splitlines()
    ]


def test_pre_tool_use_hook_refuses_rm_and_the_file_survives(
    model_server: ModelServer, repo: Path, oi_home: Path, tmp_path: Path
) -> None:
    seen = tmp_path / "seen.jsonl"
    guard = _script(tmp_path, "guard.py", GUARD)
    write_hooks(oi_home / "hooks.json", {"PreToolUse": [command_hook(f"{guard} {seen}", "^Bash$")]})
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": "rm calc.py"}, call_id="rm_1")]),
        reply(tool_calls=[call("exec_command", {"cmd": "echo hi"}, call_id="echo_1")]),
        reply("I was not allowed to delete it."),
    )
    result = run_cli([*exec_args(model_server), "delete calc.py"], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert (repo / "calc.py").exists()
    refusal = tool_outputs(model_server.bodies[1])["rm_1"]
    assert "Command blocked by PreToolUse hook: deleting files is not allowed here" in refusal
    assert "hi" in tool_outputs(model_server.bodies[2])["echo_1"]  # allowed calls still run
    assert "PreToolUse hook refused `Bash`" in result.stderr
    # Codex's payload: the shell tool reported as Bash with its command.
    payloads = [json.loads(line) for line in seen.read_text().splitlines()]
    assert payloads[0]["hook_event_name"] == "PreToolUse"
    assert payloads[0]["tool_name"] == "Bash" and payloads[0]["tool_input"] == {
        "command": "rm calc.py"
    }
    assert payloads[0]["tool_use_id"] == "rm_1" and payloads[0]["cwd"] == str(repo)
    assert payloads[0]["session_id"] == result.events[0]["thread_id"]
    # The refused command never became a command item.
    commands = [item["command"] for item in result.items("command_execution")]
    assert not any("rm calc.py" in command for command in commands)


def test_post_tool_use_hook_is_recorded_in_the_run_log(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    hook = "cat > /dev/null; echo post-hook-saw-it"
    write_hooks(oi_home / "hooks.json", {"PostToolUse": [command_hook(hook)]})
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": "echo hi"})]), reply("done")
    )
    result = run_cli([*exec_args(model_server), "say hi"], cwd=repo)
    assert result.returncode == 0, result.stderr
    runs = [e for e in _run_log(oi_home) if e.get("event") == "hook.run"]
    assert len(runs) == 1
    assert runs[0]["hook_event"] == "PostToolUse" and runs[0]["exit_code"] == 0
    assert runs[0]["stdout"].strip() == "post-hook-saw-it"
    assert runs[0]["source"] == str(oi_home / "hooks.json")


def test_session_start_context_reaches_the_model(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    answer = json.dumps(
        {
            "hookSpecificOutput": {
                "hookEventName": "SessionStart",
                "additionalContext": "Deploys freeze on Fridays.",
            }
        }
    )
    (oi_home / "config.toml").write_text(
        f'[[hooks.SessionStart]]\nmatcher = "startup"\n'
        f"[[hooks.SessionStart.hooks]]\ntype = \"command\"\ncommand = '''echo '{answer}' '''\n"
    )
    model_server.enqueue(reply("ok"))
    result = run_cli([*exec_args(model_server), "plan the deploy"], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert "Deploys freeze on Fridays." in json.dumps(model_server.bodies[0])


def test_a_hook_that_times_out_is_reported_and_the_run_goes_on(
    model_server: ModelServer, repo: Path, oi_home: Path, tmp_path: Path
) -> None:
    from tests.mcp.conftest import gone_soon, read_pid

    pid_file = tmp_path / "child.pid"
    hook = f"sleep 300 & echo $! > {pid_file}; wait"
    write_hooks(oi_home / "hooks.json", {"SessionStart": [command_hook(hook, timeout=0.5)]})
    model_server.enqueue(reply("ok"))
    result = run_cli([*exec_args(model_server), "go"], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert f"SessionStart hook `{hook}` timed out after 0.5s and was killed" in result.stderr
    # What the hook started died with it (its process group was killed).
    assert gone_soon(read_pid(pid_file))
    assert result.types()[-1] == "turn.completed"
    runs = [e for e in _run_log(oi_home) if e.get("event") == "hook.run"]
    assert runs[0]["timed_out"] is True


def test_stop_hook_makes_the_model_continue_once(
    model_server: ModelServer, repo: Path, oi_home: Path, tmp_path: Path
) -> None:
    stop = _script(
        tmp_path,
        "stop.py",
        "import json, sys\n"
        "payload = json.load(sys.stdin)\n"
        "if not payload['stop_hook_active']:\n"
        "    reason = 'Run the tests before you stop.'\n"
        "    print(json.dumps({'decision': 'block', 'reason': reason}))\n",
    )
    write_hooks(oi_home / "hooks.json", {"Stop": [command_hook(stop)]})
    model_server.enqueue(reply("All done."), reply("Tests run; all done."))
    result = run_cli([*exec_args(model_server), "go"], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert len(model_server.bodies) == 2
    assert "Run the tests before you stop." in json.dumps(model_server.bodies[1])
    messages = [item["text"] for item in result.items("agent_message")]
    assert messages[-1] == "Tests run; all done."
    # As in Codex's stream: no `error` item for the continuation; stderr says why.
    assert result.items("error") == []
    assert "a Stop hook sent the model back (1 of at most 3): Run the tests" in result.stderr


def test_project_hooks_run_only_in_a_trusted_project(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    marker = repo.parent / "project-hook-ran"
    write_hooks(
        repo / ".openinterpreter" / "hooks.json",
        {"SessionStart": [command_hook(f"touch {marker}")]},
    )
    model_server.enqueue(reply("ok"), reply("ok"))
    untrusted = run_cli([*exec_args(model_server), "go"], cwd=repo)
    assert untrusted.returncode == 0, untrusted.stderr
    assert not marker.exists()
    trust(oi_home, repo)
    trusted = run_cli([*exec_args(model_server), "go"], cwd=repo)
    assert trusted.returncode == 0, trusted.stderr
    assert marker.exists()


def test_an_invalid_hooks_file_is_a_config_error(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    write_hooks(oi_home / "hooks.json", {"PreToolUse": [{"hooks": [{"type": "command"}]}]})
    model_server.enqueue(reply("ok"))
    result = run_cli([*exec_args(model_server), "go"], cwd=repo)
    assert result.returncode == 3, result.stderr
    # Found before the thread starts, as every config error: --json says only that.
    assert "has invalid hooks" in only_failure(result)
    assert f"{oi_home / 'hooks.json'} has invalid hooks" in result.stderr
    assert "needs a non-empty `command`" in result.stderr


def test_user_prompt_submit_hook_can_block_the_prompt(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    hook = "grep -q password && { echo 'prompts must not contain passwords' >&2; exit 2; } || true"
    write_hooks(oi_home / "hooks.json", {"UserPromptSubmit": [command_hook(hook)]})
    model_server.enqueue(reply("ok"))
    blocked = run_cli([*exec_args(model_server), "the password is hunter2"], cwd=repo)
    assert blocked.returncode == 1, blocked.stderr
    assert blocked.events[-1]["type"] == "turn.failed"
    assert "prompts must not contain passwords" in blocked.events[-1]["error"]["message"]
    assert model_server.bodies == []  # the prompt never reached the model
    allowed = run_cli([*exec_args(model_server), "say hello"], cwd=repo)
    assert allowed.returncode == 0, allowed.stderr


def test_session_start_source_is_resume_on_a_resumed_thread(
    model_server: ModelServer, repo: Path, oi_home: Path, tmp_path: Path
) -> None:
    seen = tmp_path / "starts.jsonl"
    write_hooks(
        oi_home / "hooks.json",
        {
            "SessionStart": [
                command_hook(f"cat >> {seen}; echo >> {seen}", matcher="startup|resume")
            ]
        },
    )
    model_server.enqueue(reply("first"), reply("second"))
    first = run_cli([*exec_args(model_server), "one"], cwd=repo)
    assert first.returncode == 0, first.stderr
    thread = first.events[0]["thread_id"]
    second = run_cli([*exec_args(model_server), "resume", thread, "two"], cwd=repo)
    assert second.returncode == 0, second.stderr
    starts = [json.loads(line) for line in seen.read_text().splitlines() if line.strip()]
    assert [s["source"] for s in starts] == ["startup", "resume"]
    assert {s["session_id"] for s in starts} == {thread}
    # The transcript a hook may read is the session's rollout file.
    assert starts[0]["transcript_path"] and Path(starts[0]["transcript_path"]).is_file()


def test_claude_code_tools_keep_their_names_and_a_json_deny_refuses(
    model_server: ModelServer, repo: Path, oi_home: Path, tmp_path: Path
) -> None:
    seen = tmp_path / "seen.jsonl"
    deny = json.dumps(
        {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "test files are off limits",
            }
        }
    )
    write_hooks(
        oi_home / "hooks.json",
        {
            "PreToolUse": [
                command_hook(f"cat >> {seen}; echo >> {seen}"),
                command_hook(f"cat > /dev/null; echo '{deny}'", matcher="^Read$"),
            ]
        },
    )
    model_server.enqueue(
        reply(
            tool_calls=[
                call("Read", {"file_path": str(repo / "test_calc.py")}, call_id="read_1"),
                call("Bash", {"command": "echo hi"}, call_id="bash_1"),
            ]
        ),
        reply("done"),
    )
    result = run_cli(
        [*exec_args(model_server, wire="messages"), "-c", 'harness="claude-code"', "look"],
        cwd=repo,
    )
    assert result.returncode == 0, result.stderr
    outputs = tool_outputs(model_server.bodies[1])
    assert "Tool call blocked by PreToolUse hook: test files are off limits" in outputs["read_1"]
    assert "hi" in outputs["bash_1"]
    payloads = [json.loads(line) for line in seen.read_text().splitlines() if line.strip()]
    by_tool = {p["tool_name"]: p["tool_input"] for p in payloads}
    assert by_tool["Read"] == {"file_path": str(repo / "test_calc.py")}
    assert by_tool["Bash"] == {"command": "echo hi"}


def test_post_tool_use_block_reason_is_shown_to_the_model(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    answer = json.dumps({"decision": "block", "reason": "that output contains a secret"})
    write_hooks(
        oi_home / "hooks.json", {"PostToolUse": [command_hook(f"cat > /dev/null; echo '{answer}'")]}
    )
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": "echo hi"}, call_id="c1")]), reply("ok")
    )
    result = run_cli([*exec_args(model_server), "go"], cwd=repo)
    assert result.returncode == 0, result.stderr
    output = tool_outputs(model_server.bodies[1])["c1"]
    assert "hi" in output and "[PostToolUse hook] that output contains a secret" in output


def test_mcp_tools_reach_hooks_by_their_mcp_name(
    model_server: ModelServer, repo: Path, oi_home: Path, tmp_path: Path
) -> None:
    from tests.mcp.conftest import server_flags

    seen = tmp_path / "seen.jsonl"
    write_hooks(
        oi_home / "hooks.json",
        {
            "PreToolUse": [command_hook(f"cat >> {seen}; echo >> {seen}", matcher="^mcp__mini__")],
            "PostToolUse": [command_hook(f"cat >> {seen}; echo >> {seen}", matcher="^mcp__")],
        },
    )
    model_server.enqueue(
        reply(tool_calls=[call("mcp__mini__echo", {"text": "hello"}, call_id="c1")]),
        reply("done"),
    )
    result = run_cli([*exec_args(model_server), *server_flags(), "echo"], cwd=repo)
    assert result.returncode == 0, result.stderr
    payloads = [json.loads(line) for line in seen.read_text().splitlines() if line.strip()]
    assert [p["hook_event_name"] for p in payloads] == ["PreToolUse", "PostToolUse"]
    assert {p["tool_name"] for p in payloads} == {"mcp__mini__echo"}
    assert payloads[0]["tool_input"] == {"text": "hello"}
    assert "echo: hello" in payloads[1]["tool_response"]


def test_system_message_is_shown_and_continue_false_stops_the_prompt(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    note = json.dumps({"systemMessage": "hooks are watching"})
    stop = json.dumps({"continue": False, "stopReason": "maintenance window"})
    write_hooks(
        oi_home / "hooks.json",
        {
            "SessionStart": [command_hook(f"echo '{note}'")],
            "UserPromptSubmit": [command_hook(f"cat > /dev/null; echo '{stop}'")],
        },
    )
    model_server.enqueue(reply("ok"))
    result = run_cli([*exec_args(model_server), "go"], cwd=repo)
    assert "SessionStart hook: hooks are watching" in result.stderr
    assert result.returncode == 1, result.stderr
    assert "maintenance window" in result.events[-1]["error"]["message"]
    assert model_server.bodies == []


def test_project_hooks_reached_through_a_symlink_are_ignored(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    # The sandbox keeps .openinterpreter read-only, not where a link sends it; a command could
    # swap such a link for a directory of its own, and hooks run outside the sandbox.
    marker = repo.parent / "linked-hook-ran"
    write_hooks(
        repo / "elsewhere" / "hooks.json", {"SessionStart": [command_hook(f"touch {marker}")]}
    )
    (repo / ".openinterpreter").symlink_to("elsewhere")
    trust(oi_home, repo)
    model_server.enqueue(reply("ok"))
    result = run_cli([*exec_args(model_server), "go"], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert not marker.exists()
    hooks_file = repo / ".openinterpreter" / "hooks.json"
    assert f"ignored {hooks_file}: it is reached through a symbolic link" in result.stderr


def test_a_home_inside_the_workspace_is_warned_about(model_server: ModelServer, repo: Path) -> None:
    # Commands in workspace-write could write its hooks.json, run by later runs unsandboxed.
    home = repo / "ci-home"
    home.mkdir()
    model_server.enqueue(reply("ok"), reply("ok"))
    env = {**os.environ, "OPENINTERPRETER_HOME": str(home)}
    inside = run_cli([*exec_args(model_server), "-s", "workspace-write", "go"], cwd=repo, env=env)
    assert inside.returncode == 0, inside.stderr
    assert f"the oiexec home {home} is inside the workspace {repo}" in inside.stderr
    elsewhere = run_cli([*exec_args(model_server), "-s", "workspace-write", "go"], cwd=repo)
    assert elsewhere.returncode == 0, elsewhere.stderr
    assert "is inside the workspace" not in elsewhere.stderr
