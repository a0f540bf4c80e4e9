"""Skills: found in the user's and (trusted) project's skill folders, listed to the model as
each product lists them, read by the model through its own tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import exec_args, run_cli
from tests.extensions.conftest import trust, write_skill
from tests.support.model_server import ModelServer, call, reply, tool_outputs

BODY = "To release: bump the version, then tag it. SECRET-STEP-42."


def _input_messages(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(role, text) of the Responses request's message items."""
    found = []
    for item in body.get("input") or []:
        if item.get("type") == "message":
            text = "".join(part.get("text", "") for part in item.get("content") or [])
            found.append((item["role"], text))
    return found


def test_native_lists_skills_as_codex_and_the_model_reads_one(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    user_skill = write_skill(
        Path.home() / ".agents" / "skills",
        "release",
        "release",
        "Cut a release of the project",
        BODY,
    )
    home_skill = write_skill(oi_home / "skills", "lint", "lint-fix", "Fix lint errors", "Run ruff.")
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": f"cat {user_skill}"})]),
        reply("Released."),
    )
    result = run_cli([*exec_args(model_server), "release the project"], cwd=repo)
    assert result.returncode == 0, result.stderr

    first = model_server.bodies[0]
    messages = _input_messages(first)
    # The base prompt first, then Codex's skills block with name, description and path.
    assert messages[1][0] == "developer" and messages[1][1].startswith("<skills_instructions>")
    block = messages[1][1]
    assert f"- release: Cut a release of the project (file: {user_skill})" in block
    assert f"- lint-fix: Fix lint errors (file: {home_skill})" in block
    assert "SECRET-STEP-42" not in json.dumps(first)  # only the listing, not the body
    # The model opened the SKILL.md with its shell tool and read the body.
    outputs = tool_outputs(model_server.bodies[1])
    assert any("SECRET-STEP-42" in text for text in outputs.values())


def test_claude_code_lists_skills_in_a_system_reminder_and_reads_with_read(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    skill = write_skill(oi_home / "skills", "release", "release", "Cut a release", BODY)
    model_server.enqueue(
        reply(tool_calls=[call("Read", {"file_path": str(skill)}, call_id="read_1")]),
        reply("Done."),
    )
    result = run_cli(
        [*exec_args(model_server, wire="messages"), "-c", 'harness="claude-code"', "release"],
        cwd=repo,
    )
    assert result.returncode == 0, result.stderr
    first = json.dumps(model_server.bodies[0])
    assert "<system-reminder>" in first and f"- release: Cut a release (file: {skill})" in first
    assert "SECRET-STEP-42" in tool_outputs(model_server.bodies[1])["read_1"]


def test_qwen_code_lists_available_skills(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    skill = write_skill(oi_home / "skills", "release", "release", "Cut a release", BODY)
    model_server.enqueue(reply("Done."))
    result = run_cli(
        [*exec_args(model_server, wire="chat"), "-c", 'harness="qwen-code"', "release"], cwd=repo
    )
    assert result.returncode == 0, result.stderr
    first = json.dumps(model_server.bodies[0])
    assert "<available_skills>" in first
    assert f"<location>{skill}</location>" in first and "<name>release</name>" in first


def test_project_skills_only_in_a_trusted_project(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    sub = repo / "pkg"
    sub.mkdir()
    write_skill(repo / ".agents" / "skills", "deploy", "deploy", "Deploy from the root", "x")
    write_skill(sub / ".agents" / "skills", "pkg-build", "pkg-build", "Build the package", "x")
    model_server.enqueue(reply("ok"), reply("ok"))

    untrusted = run_cli([*exec_args(model_server), "go"], cwd=sub)
    assert untrusted.returncode == 0, untrusted.stderr
    assert "<skills_instructions>" not in json.dumps(model_server.bodies[0])

    trust(oi_home, repo)
    trusted = run_cli([*exec_args(model_server), "go"], cwd=sub)
    assert trusted.returncode == 0, trusted.stderr
    listed = json.dumps(model_server.bodies[1])
    assert "- deploy: Deploy from the root" in listed and "- pkg-build: Build the package" in listed


def test_disable_skills_lists_none(model_server: ModelServer, repo: Path, oi_home: Path) -> None:
    write_skill(oi_home / "skills", "release", "release", "Cut a release", BODY)
    model_server.enqueue(reply("ok"))
    result = run_cli([*exec_args(model_server), "--disable", "skills", "go"], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert "skills_instructions" not in json.dumps(model_server.bodies[0])


def test_a_bad_skill_is_skipped_with_a_warning_naming_it(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    write_skill(oi_home / "skills", "good", "good", "A fine skill", "x")
    bad = oi_home / "skills" / "bad" / "SKILL.md"
    bad.parent.mkdir(parents=True)
    bad.write_text("---\nname: bad\n---\nno description here\n")
    model_server.enqueue(reply("ok"))
    result = run_cli([*exec_args(model_server), "go"], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert f"skill {bad} skipped" in result.stderr and "no `description`" in result.stderr
    listed = json.dumps(model_server.bodies[0])
    assert "- good: A fine skill" in listed and "- bad:" not in listed
