"""What the run is told besides its task, through the real CLI on every wire: the user's
`model_instructions_file` replaces the harness's prompt (with a note on stderr),
`developer_instructions` and `--append-system-prompt` are added after it where the harness's
product puts such text, review keeps its rubric, and a bad file is a one-line error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from oiexec.runner.instructions import INSTRUCTIONS_MAX
from tests.conftest import exec_args, git, run_cli
from tests.review.test_review_cli import answer, review
from tests.support.model_server import ModelServer, reply

BASE = "Base text from my file; $cwd stays as written."


def _texts(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content)


def _leading_system(body: dict[str, Any]) -> list[str]:
    """The instructions a request opens with, whatever the wire: Responses `developer`
    items, Chat Completions `system` messages, the Messages wire's `system` blocks."""
    if "system" in body:
        return [block["text"] for block in body["system"]]
    items = body.get("input") or body.get("messages") or []
    texts = []
    for item in items:
        if item.get("role") not in {"developer", "system"}:
            break
        texts.append(_texts(item["content"]))
    return texts


@pytest.fixture
def told(oi_home: Path, repo: Path) -> Path:
    """A user config with both keys; the appended text in a file of the working directory."""
    (oi_home / "prompts").mkdir()
    (oi_home / "prompts" / "base.md").write_text(BASE + "\n")
    (oi_home / "config.toml").write_text(
        'developer_instructions = "Developer text from config."\n'
        'model_instructions_file = "prompts/base.md"\n'
    )
    (repo / "append.md").write_text("Appended text from a file.\n")
    return oi_home


@pytest.mark.parametrize(
    ("wire", "flag", "appended", "expected"),
    [
        # native: the base instructions, then one developer message (Codex's order).
        ("responses", "@append.md", "Appended text from a file.", "message"),
        # native on Chat Completions: the same as two system messages.
        ("chat", "Appended text.", "Appended text.", "message"),
        # claude-code (chosen for the Messages wire): appended to the one system prompt.
        ("messages", "Appended text.", "Appended text.", "system"),
    ],
)
def test_every_input_reaches_the_request(
    model_server: ModelServer,
    repo: Path,
    told: Path,
    wire: str,
    flag: str,
    appended: str,
    expected: str,
) -> None:
    model_server.enqueue(reply("done"))
    result = run_cli(
        [*exec_args(model_server, wire=wire), "--append-system-prompt", flag, "say done"],
        cwd=repo,
    )
    assert result.returncode == 0, result.stderr
    developer = f"Developer text from config.\n\n{appended}"
    system = _leading_system(model_server.bodies[0])
    if expected == "message":
        assert system == [BASE + "\n", developer]
    else:
        assert system == [f"{BASE}\n\n{developer}"]
    body = json.dumps(model_server.bodies[0])
    assert body.count("Developer text from config.") == 1
    note = (
        f"model_instructions_file ({told / 'config.toml'}:2): {told / 'prompts' / 'base.md'} "
        "replaces the harness's base instructions"
    )
    assert note in result.stderr
    # A note, not an `error` item: a Codex SDK consumer's items stay Codex's.
    assert not result.items("error")


def test_review_keeps_its_rubric_and_appends(
    model_server: ModelServer, repo: Path, told: Path
) -> None:
    (repo / "calc.py").write_text("def add(a, b):\n    return b - a\n")
    model_server.enqueue(reply(answer()))
    result = review(
        model_server,
        repo,
        "--uncommitted",
        "--append-system-prompt",
        "Focus on arithmetic.",
        top_level=True,
    )
    assert result.returncode == 0, result.stderr
    (rubric,) = _leading_system(model_server.bodies[0])[:1]
    assert BASE not in rubric  # the rubric is the base instructions of a review
    developer = _leading_system(model_server.bodies[0])[1]
    assert developer == "Developer text from config.\n\nFocus on arithmetic."
    assert "model_instructions_file" in result.stderr and "not used by review" in result.stderr


def _write(path: Path, content: bytes | None) -> None:
    if content is not None:
        path.write_bytes(content)


@pytest.mark.parametrize(
    ("flag", "content", "expected"),
    [
        ("@missing.md", None, "--append-system-prompt @{repo}/missing.md: no such file"),
        ("@empty.md", b"\n", "--append-system-prompt @{repo}/empty.md: the file is empty"),
        ("@huge.md", b"x" * (INSTRUCTIONS_MAX + 1), "over the 1 MiB limit for this file"),
        ("   ", None, "needs text to append (or @FILE), not a blank string"),
    ],
)
def test_bad_append_is_a_usage_error(
    model_server: ModelServer, repo: Path, flag: str, content: bytes | None, expected: str
) -> None:
    _write(repo / flag.lstrip("@"), content)
    result = run_cli(
        [*exec_args(model_server), "--append-system-prompt", flag, "never sent"], cwd=repo
    )
    assert result.returncode == 2, result.stderr
    assert expected.format(repo=repo) in result.stderr
    assert "Traceback" not in result.stderr
    assert model_server.bodies == []


def test_missing_model_instructions_file_is_a_config_error(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    result = run_cli(
        [*exec_args(model_server), "-c", 'model_instructions_file="nowhere.md"', "never sent"],
        cwd=repo,
    )
    assert result.returncode == 3, result.stderr
    lines = [line for line in result.stderr.splitlines() if "nowhere.md" in line]
    assert lines == [
        f"Error: model_instructions_file {repo / 'nowhere.md'} (-c override): no such file"
    ], result.stderr
    assert model_server.bodies == []


def test_project_config_cannot_send_a_file_outside_it(
    model_server: ModelServer, repo: Path, oi_home: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    (oi_home / "config.toml").write_text(f'[projects."{repo}"]\ntrust_level = "trusted"\n')
    (repo / ".openinterpreter").mkdir()
    (repo / ".openinterpreter" / "config.toml").write_text(
        f'model_instructions_file = "{secret}"\n'
    )
    git(repo, "add", "-A")
    result = run_cli([*exec_args(model_server), "never sent"], cwd=repo)
    assert result.returncode == 3, result.stderr
    assert "a project's config may only name a file inside the project" in result.stderr
    assert "TOP SECRET" not in result.stderr
    assert model_server.bodies == []
