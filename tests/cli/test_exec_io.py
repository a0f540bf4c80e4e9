"""Prompt and stdin rules, structured output, retries, escalation, secrets, config layers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import exec_args, run_cli
from tests.support.model_server import (
    ModelServer,
    call,
    drop_after,
    fault,
    reply,
    tool_outputs,
    user_texts,
)

# --- prompt and stdin ----------------------------------------------------------------------


def test_prompt_from_stdin_untrimmed(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(reply("ok"))
    result = run_cli(exec_args(model_server), cwd=repo, input="  do the thing\n")
    assert result.returncode == 0, result.stderr
    assert "Reading prompt from stdin..." in result.stderr
    assert "  do the thing\n" in user_texts(model_server.bodies[0])


def test_dash_reads_stdin(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(reply("ok"))
    result = run_cli([*exec_args(model_server), "-"], cwd=repo, input="from stdin")
    assert result.returncode == 0, result.stderr
    assert "from stdin" in user_texts(model_server.bodies[0])


def test_prompt_plus_stdin_appends_a_stdin_block(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(reply("ok"))
    result = run_cli([*exec_args(model_server), "summarize"], cwd=repo, input="line 1\nline 2\n")
    assert result.returncode == 0, result.stderr
    assert "summarize\n\n<stdin>\nline 1\nline 2\n</stdin>" in user_texts(model_server.bodies[0])


def test_prompt_with_empty_stdin_is_just_the_prompt(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(reply("ok"))
    result = run_cli([*exec_args(model_server), "alone"], cwd=repo, input="")
    assert result.returncode == 0
    assert "alone" in user_texts(model_server.bodies[0])
    assert "<stdin>" not in json.dumps(model_server.bodies[0])


def test_utf8_bom_and_utf16_stdin_are_decoded(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(reply("ok"), reply("ok"))
    bom = run_cli(exec_args(model_server), cwd=repo, input="\ufeffprüfen".encode())
    utf16 = run_cli(exec_args(model_server), cwd=repo, input="héllo".encode("utf-16"))
    assert bom.returncode == 0 and utf16.returncode == 0
    assert "prüfen" in user_texts(model_server.bodies[0])
    assert "héllo" in user_texts(model_server.bodies[1])


def test_invalid_utf8_stdin_is_a_usage_error(repo: Path, model_server: ModelServer) -> None:
    # A usable provider: stdin is read only after the config and the key passed.
    result = run_cli([*exec_args(model_server), "-"], cwd=repo, input=b"ok \x80\x81 broken")
    assert result.returncode == 2
    assert "not valid UTF-8" in result.stderr


def test_empty_prompt_argument_is_a_usage_error(repo: Path) -> None:
    result = run_cli(["exec", "   "], cwd=repo)
    assert result.returncode == 2
    assert "The prompt is empty" in result.stderr


def test_approval_flag_is_accepted_but_never_is_forced(
    model_server: ModelServer, repo: Path
) -> None:
    model_server.enqueue(reply("ok"))
    result = run_cli([*exec_args(model_server), "-a", "on-request", "x"], cwd=repo)
    assert result.returncode == 0
    assert "approval policy `never`" in result.stderr


# --- --output-schema -----------------------------------------------------------------------

SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["pass", "fail"]}},
    "required": ["verdict"],
    "additionalProperties": False,
}


def _schema_file(tmp_path: Path) -> Path:
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(SCHEMA))
    return path


def test_output_schema_is_sent_and_the_answer_written(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    model_server.enqueue(reply('{"verdict": "pass"}'))
    last = tmp_path / "last.json"
    args = [*exec_args(model_server), "--output-schema", str(_schema_file(tmp_path))]
    result = run_cli([*args, "-o", str(last), "judge"], cwd=repo)
    assert result.returncode == 0, result.stderr
    text_format = model_server.bodies[0]["text"]["format"]
    assert text_format == {
        "type": "json_schema",
        "strict": True,
        "schema": SCHEMA,
        "name": "codex_output_schema",
    }
    assert result.items("agent_message")[-1]["text"] == '{"verdict": "pass"}'
    assert json.loads(last.read_text()) == {"verdict": "pass"}


def test_output_schema_asks_once_for_a_correction(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    model_server.enqueue(reply("It passes!"), reply('{"verdict": "pass"}'))
    args = [*exec_args(model_server), "--output-schema", str(_schema_file(tmp_path))]
    result = run_cli([*args, "judge"], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert "does not match the required output schema" in user_texts(model_server.bodies[1])[-1]
    assert [m["text"] for m in result.items("agent_message")] == ['{"verdict": "pass"}']


def test_output_schema_twice_wrong_fails_and_writes_no_last_message(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    model_server.enqueue(reply('{"verdict": "maybe"}'), reply('{"verdict": "perhaps"}'))
    last = tmp_path / "last.json"
    args = [*exec_args(model_server), "--output-schema", str(_schema_file(tmp_path))]
    result = run_cli([*args, "-o", str(last), "judge"], cwd=repo)
    assert result.returncode == 1
    assert "does not match --output-schema" in result.events[-1]["error"]["message"]
    assert not last.exists()


# --- retries -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "trouble",
    [fault(status=429, retry_after=0), fault(status=500), fault(status=503), drop_after(2)],
    ids=["429", "500", "503", "dropped-stream"],
)
def test_retries_recover_without_duplicating_items(
    model_server: ModelServer, repo: Path, trouble: object
) -> None:
    model_server.enqueue(trouble, reply("recovered"))  # type: ignore[arg-type]
    result = run_cli([*exec_args(model_server), "x"], cwd=repo)
    assert result.returncode == 0, result.stderr
    errors = [e["message"] for e in result.events if e["type"] == "error"]
    assert len(errors) == 1 and errors[0].startswith("Reconnecting... 1/")
    assert [m["text"] for m in result.items("agent_message")] == ["recovered"]


def test_retries_give_up_and_fail(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(*[fault(status=500, message="still broken")] * 3)
    args = exec_args(model_server, request_max_retries=2)
    result = run_cli([*args, "x"], cwd=repo)
    assert result.returncode == 1
    errors = [e["message"] for e in result.events if e["type"] == "error"]
    assert [m.split(" (")[0] for m in errors] == ["Reconnecting... 1/2", "Reconnecting... 2/2"]
    assert "still broken" in result.events[-1]["error"]["message"]


# --- approvals and escalation --------------------------------------------------------------


def test_escalation_is_refused_and_the_run_goes_on(model_server: ModelServer, repo: Path) -> None:
    escalate = call(
        "exec_command",
        {"cmd": "touch escalated.txt", "sandbox_permissions": "require_escalated"},
    )
    model_server.enqueue(reply(tool_calls=[escalate]), reply("did without"))
    result = run_cli(
        [*exec_args(model_server), "-c", 'approval_policy="on-request"', "x"], cwd=repo
    )
    assert result.returncode == 0, result.stderr
    assert not (repo / "escalated.txt").exists()
    assert result.items("command_execution", "item.started") == []
    [output] = tool_outputs(model_server.bodies[1]).values()
    assert "never" in output
    assert "ERROR" in result.stderr or "escalat" in result.stderr


# --- secrets -------------------------------------------------------------------------------

SECRET = "sk-live-abcdef0123456789"


def test_api_key_never_reaches_commands_events_or_sessions(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": "env | grep -c SCRIPTED_KEY || true"})]),
        reply(f"I found the key {SECRET} in my memory"),
    )
    args = [*exec_args(model_server, env_key="SCRIPTED_KEY"), "x"]
    result = run_cli(args, cwd=repo, env={"SCRIPTED_KEY": SECRET})
    assert result.returncode == 0, result.stderr
    assert model_server.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    assert result.items("command_execution")[0]["aggregated_output"].strip() == "0"
    assert SECRET not in result.stdout and SECRET not in result.stderr
    assert "[REDACTED]" in result.stdout
    for path in (oi_home / "sessions").rglob("*.jsonl"):
        assert SECRET not in path.read_text()


# --- config layering -----------------------------------------------------------------------


def test_layers_user_profile_project_and_flags(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    (oi_home / "config.toml").write_text(
        f'model = "user-model"\n\n[profiles.review]\nmodel = "profile-model"\n\n'
        f'[projects."{repo}"]\ntrust_level = "trusted"\n'
    )
    (repo / ".openinterpreter").mkdir()
    (repo / ".openinterpreter" / "config.toml").write_text('model = "project-model"\n')
    model_server.enqueue(*[reply("ok")] * 4)
    base = exec_args(model_server)
    run_cli([*base, "x"], cwd=repo)
    run_cli([*base, "-p", "review", "x"], cwd=repo)
    run_cli([*base, "-c", "model=dash-c-model", "x"], cwd=repo)
    run_cli([*base, "-c", "model=dash-c-model", "-m", "flag-model", "x"], cwd=repo)
    models = [body["model"] for body in model_server.bodies]
    # The trusted project layer beats the profile; -c beats the project; -m beats -c.
    assert models == ["project-model", "project-model", "dash-c-model", "flag-model"]


def test_untrusted_project_config_is_ignored_with_a_warning(
    model_server: ModelServer, repo: Path
) -> None:
    (repo / ".openinterpreter").mkdir()
    (repo / ".openinterpreter" / "config.toml").write_text('model = "project-model"\n')
    model_server.enqueue(reply("ok"))
    result = run_cli([*exec_args(model_server), "x"], cwd=repo)
    assert result.returncode == 0
    assert model_server.bodies[0]["model"] != "project-model"
    assert "not trusted" in result.stderr


def test_project_config_through_a_symlink_is_ignored(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    """A model-writable directory linked as `.openinterpreter` must not become config: the
    sandbox guards the name, not where a link sends it (a dangling link's target could be
    created and filled by a command)."""
    (oi_home / "config.toml").write_text(f'[projects."{repo}"]\ntrust_level = "trusted"\n')
    (repo / "cfg").mkdir()
    (repo / "cfg" / "config.toml").write_text('model = "planted-model"\n')
    (repo / ".openinterpreter").symlink_to("cfg")
    model_server.enqueue(reply("ok"))
    result = run_cli([*exec_args(model_server), "x"], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert model_server.bodies[0]["model"] != "planted-model"
    assert "symbolic link" in result.stderr


def test_config_show_origins(repo: Path, oi_home: Path) -> None:
    config = oi_home / "config.toml"
    config.write_text('model = "user-model"\n\n[sandbox_workspace_write]\nnetwork_access = true\n')
    result = run_cli(["config", "show", "--origins", "-c", "model_reasoning_effort=high"], cwd=repo)
    assert result.returncode == 0, result.stderr
    lines = {line.split(" = ")[0]: line for line in result.stdout.splitlines() if " = " in line}
    assert f"user ({config}:1)" in lines["model"]
    assert f"user ({config}:4)" in lines["sandbox_workspace_write.network_access"]
    assert "-c override" in lines["model_reasoning_effort"]
    assert "forced by exec" in lines["approval_policy"]
    assert "# default" in lines["project_doc_max_bytes"]


def test_config_show_missing_profile_is_a_config_error(repo: Path) -> None:
    result = run_cli(["config", "show", "-p", "nope"], cwd=repo)
    assert result.returncode == 3
    assert "profile `nope` not found" in result.stderr


def test_run_log_records_outcome_without_secrets(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    model_server.enqueue(fault(status=500), reply(f"the key is {SECRET}"))
    args = [*exec_args(model_server, env_key="SCRIPTED_KEY"), "x"]
    result = run_cli(args, cwd=repo, env={"SCRIPTED_KEY": SECRET})
    assert result.returncode == 0, result.stderr
    [log] = list((oi_home / "logs").glob("oiexec-*.log"))
    records = [json.loads(line) for line in log.read_text().splitlines()]
    events = [r["event"] for r in records]
    assert events == ["run.started", "provider.retry", "run.completed", "run.exit"]
    assert records[-1]["exit_code"] == 0
    assert all(r["thread_id"] == result.events[0]["thread_id"] for r in records)
    assert SECRET not in log.read_text()


# --- flags -----------------------------------------------------------------------------------

PNG_1PX = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d4944415478da63f8ffff3f0005fe02fea7d6a0b90000000049454e44ae426082"
)


def test_image_is_attached_to_the_prompt(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    image = tmp_path / "shot.png"
    image.write_bytes(PNG_1PX)
    model_server.enqueue(reply("a pixel"))
    result = run_cli([*exec_args(model_server), "--image", str(image), "what is this?"], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert "data:image/png;base64," in json.dumps(model_server.bodies[0]["input"])


def test_missing_image_is_a_usage_error(repo: Path, model_server: ModelServer) -> None:
    result = run_cli([*exec_args(model_server), "-i", "nope.png", "x"], cwd=repo)
    assert result.returncode == 2
    assert "nope.png" in result.stderr


def test_oss_uses_the_local_provider_without_a_key(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(reply("local"))
    args = ["exec", "--json", "-s", "danger-full-access", "--oss", "-m", "qwen3-coder"]
    override = ["-c", f'model_providers.ollama.base_url="{model_server.base_url}"']
    result = run_cli([*args, *override, "x"], cwd=repo)
    assert result.returncode == 0, result.stderr
    request = model_server.model_requests[0]
    assert request.path.endswith("/chat/completions")
    assert "authorization" not in request.headers


def test_chat_completions_flag_switches_the_wire(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(reply("via chat"))
    result = run_cli([*exec_args(model_server), "--chat-completions", "x"], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert model_server.model_requests[0].path.endswith("/chat/completions")
    assert result.items("agent_message")[0]["text"] == "via chat"


def test_cd_sets_the_working_directory(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    model_server.enqueue(reply(tool_calls=[call("exec_command", {"cmd": "pwd"})]), reply("ok"))
    result = run_cli([*exec_args(model_server), "-C", str(repo), "x"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.items("command_execution")[0]["aggregated_output"].strip() == str(repo)


def test_color_only_when_asked(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(reply("plain"), reply("colour"))
    base = [a for a in exec_args(model_server) if a != "--json"]
    plain = run_cli([*base, "x"], cwd=repo)
    coloured = run_cli([*base, "--color", "always", "x"], cwd=repo)
    assert "\x1b[" not in plain.stderr
    assert "\x1b[" in coloured.stderr
    assert coloured.stdout == "colour\n"


def test_config_warnings_are_error_items_in_json_mode(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    (oi_home / "config.toml").write_text('modle = "typo"\n')
    model_server.enqueue(reply("ok"))
    result = run_cli([*exec_args(model_server), "x"], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert result.types()[:3] == ["thread.started", "item.completed", "turn.started"]
    warning = result.events[1]["item"]
    assert warning["type"] == "error" and "modle" in warning["message"]
    assert warning["id"] == "item_0"
    assert result.items("agent_message")[0]["id"] == "item_1"
