"""A resumed run is made as the session's run was, and what is given now overrides it,
announced and recorded: the retries a pipeline makes with `resume`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import run_cli
from tests.support.model_server import ModelServer, call, reply, tool_names, user_texts


def _args(server: ModelServer, *extra: str) -> list[str]:
    """`exec --json` on the scripted provider, with no sandbox flag (unlike `exec_args`)."""
    return ["exec", "--json", *server.config_args(), *extra]


def _records(home: Path, thread_id: str) -> list[dict[str, Any]]:
    [path] = (home / "sessions").rglob(f"rollout-*-{thread_id}.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def _turn_contexts(home: Path, thread_id: str) -> list[dict[str, Any]]:
    return [r["payload"] for r in _records(home, thread_id) if r["type"] == "turn_context"]


def _environment_contexts(body: dict[str, Any]) -> list[str]:
    return [text for text in user_texts(body) if "<environment_context>" in text]


def test_sandbox_and_roots_are_restored_and_a_narrower_sandbox_is_announced(
    model_server: ModelServer, repo: Path, tmp_path: Path, oi_home: Path
) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    model_server.enqueue(
        reply("started"),
        reply(tool_calls=[call("exec_command", {"cmd": "touch resumed.txt extra-ok.txt"})]),
        reply(tool_calls=[call("exec_command", {"cmd": f"touch {extra}/from-resume.txt"})]),
        reply("wrote them"),
        reply(tool_calls=[call("exec_command", {"cmd": "touch refused.txt"})]),
        reply("could not write"),
    )
    first = run_cli(
        [*_args(model_server, "-s", "workspace-write", "--add-dir", str(extra)), "start"],
        cwd=repo,
    )
    assert first.returncode == 0, first.stderr
    thread_id = first.events[0]["thread_id"]

    # No -s, started from another directory: the run is made as it was (an --add-dir given
    # again is no change).
    resumed = run_cli(
        [*_args(model_server, "--add-dir", str(extra)), "resume", thread_id, "write files"],
        cwd=elsewhere,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "resume:" not in resumed.stderr
    assert (repo / "resumed.txt").exists() and (extra / "from-resume.txt").exists()
    assert not (elsewhere / "resumed.txt").exists()
    assert resumed.items("error") == []
    [context] = _environment_contexts(model_server.bodies[1])
    assert "<sandbox_mode>workspace-write</sandbox_mode>" in context
    assert f"<cwd>{repo}</cwd>" in context

    narrowed = run_cli(
        [*_args(model_server, "-s", "read-only"), "resume", thread_id, "write another"],
        cwd=repo,
    )
    assert narrowed.returncode == 0, narrowed.stderr
    line = "resume: sandbox workspace-write -> read-only (from -s)"
    assert line in narrowed.stderr
    assert line in [item["message"] for item in narrowed.items("error")]
    # The model is told what is enforced now, after what the history said.
    contexts = _environment_contexts(model_server.bodies[-1])
    assert len(contexts) == 2
    assert "<sandbox_mode>read-only</sandbox_mode>" in contexts[-1]
    assert not (repo / "refused.txt").exists()
    latest = _turn_contexts(oi_home, thread_id)[-1]
    assert latest["sandbox_policy"]["type"] == "read-only"
    assert latest["overrides"][0]["name"] == "sandbox"
    assert latest["overrides"][0]["source"] == "-s"
    shown = json.loads(run_cli(["sessions", "show", "--json", thread_id], cwd=repo).stdout)
    assert [run["prompt"] for run in shown["runs"]] == ["start", "write files", "write another"]
    assert [i["type"] for i in shown["runs"][1]["items"]].count("error") == 0
    assert line in [i.get("message") for i in shown["runs"][2]["items"]]
    assert shown["runs"][2]["overrides"] == latest["overrides"]


def test_model_effort_schema_and_harness_are_restored_and_a_model_override_is_recorded(
    model_server: ModelServer, repo: Path, tmp_path: Path, oi_home: Path
) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text(
        json.dumps(
            {
                "type": "object",
                "properties": {"answer": {"type": "string"}},
                "required": ["answer"],
                "additionalProperties": False,
            }
        )
    )
    model_server.enqueue(
        reply('{"answer": "one"}'), reply('{"answer": "two"}'), reply('{"answer": "three"}')
    )
    made_with = [
        "-s", "danger-full-access", "-m", "model-a", "-c", 'model_reasoning_effort="high"',
        "-c", 'harness="classic"', "--output-schema", str(schema),
    ]  # fmt: skip
    first = run_cli([*_args(model_server, *made_with), "first"], cwd=repo)
    assert first.returncode == 0, first.stderr
    thread_id = first.events[0]["thread_id"]

    again = run_cli([*_args(model_server), "resume", thread_id, "second"], cwd=repo)
    assert again.returncode == 0, again.stderr
    assert again.stderr.count("resume:") == 0
    first_body, second_body = model_server.bodies
    assert second_body["model"] == "model-a"
    assert second_body["reasoning"]["effort"] == "high"
    assert second_body["text"]["format"]["schema"] == first_body["text"]["format"]["schema"]
    assert tool_names(second_body) == tool_names(first_body)
    assert _turn_contexts(oi_home, thread_id)[-1]["harness"] == "classic"

    switched = run_cli(
        [*_args(model_server, "-m", "model-b"), "resume", thread_id, "third"], cwd=repo
    )
    assert switched.returncode == 0, switched.stderr
    assert "resume: model model-a -> model-b (from -m)" in switched.stderr
    # A new model re-selects the harness; effort and schema still come from the session.
    assert "resume: harness classic -> " in switched.stderr
    third_body = model_server.bodies[-1]
    assert third_body["model"] == "model-b"
    assert third_body["reasoning"]["effort"] == "high"
    assert "format" in third_body["text"]
    latest = _turn_contexts(oi_home, thread_id)[-1]
    assert latest["model"] == "model-b"
    names = [o["name"] for o in latest["overrides"]]
    assert names == ["model", "harness"]
    # Only sandbox changes are `error` items; a model change is a stderr line.
    assert switched.items("error") == []


def test_resume_last_all_finds_a_session_of_another_directory_and_works_there(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    model_server.enqueue(reply("started"), reply("resumed"))
    first = run_cli([*_args(model_server, "-s", "read-only"), "remember"], cwd=repo)
    here = run_cli([*_args(model_server), "resume", "--last", "again"], cwd=elsewhere)
    assert here.returncode == 2
    assert f"to resume in {elsewhere}" in here.stderr
    wide = run_cli([*_args(model_server), "resume", "--last", "--all", "again"], cwd=elsewhere)
    assert wide.returncode == 0, wide.stderr
    assert wide.events[0]["thread_id"] == first.events[0]["thread_id"]
    [context] = _environment_contexts(model_server.bodies[-1])
    assert f"<cwd>{repo}</cwd>" in context


def test_or_new_and_all_need_last(model_server: ModelServer, repo: Path) -> None:
    result = run_cli([*_args(model_server), "resume", "--or-new", "some-id", "x"], cwd=repo)
    assert result.returncode == 2
    assert "--all and --or-new only apply to `resume --last`" in result.stderr


def test_fork_is_made_as_the_parent_was(
    model_server: ModelServer, repo: Path, tmp_path: Path, oi_home: Path
) -> None:
    model_server.enqueue(reply("parent"), reply("fork"))
    parent = run_cli(
        [*_args(model_server, "-s", "workspace-write", "-m", "model-a"), "parent task"], cwd=repo
    )
    parent_id = parent.events[0]["thread_id"]
    fork = run_cli([*_args(model_server), "fork", parent_id, "fork task"], cwd=tmp_path)
    assert fork.returncode == 0, fork.stderr
    assert "fork:" not in fork.stderr
    assert model_server.bodies[-1]["model"] == "model-a"
    fork_context = _turn_contexts(oi_home, fork.events[0]["thread_id"])[-1]
    assert fork_context["sandbox_policy"]["type"] == "workspace-write"
    assert fork_context["cwd"] == str(repo)


def test_a_profile_given_now_overrides_the_session_but_the_environment_does_not(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    (oi_home / "config.toml").write_text('[profiles.fast]\nmodel = "model-fast"\n')
    model_server.enqueue(reply("one"), reply("two"), reply("three"))
    first = run_cli([*_args(model_server, "-s", "read-only", "-m", "model-a"), "x"], cwd=repo)
    thread_id = first.events[0]["thread_id"]
    from_env = run_cli(
        [*_args(model_server), "resume", thread_id, "y"],
        cwd=repo,
        env={"OIEXEC_MODEL": "model-env"},
    )
    assert from_env.returncode == 0, from_env.stderr
    assert model_server.bodies[-1]["model"] == "model-a"
    profiled = run_cli([*_args(model_server, "-p", "fast"), "resume", thread_id, "z"], cwd=repo)
    assert profiled.returncode == 0, profiled.stderr
    assert model_server.bodies[-1]["model"] == "model-fast"
    assert "resume: model model-a -> model-fast (from profile fast" in profiled.stderr
