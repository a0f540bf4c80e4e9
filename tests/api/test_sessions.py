"""Threads across turns and `Agent` instances, reviews, and errors as the package's classes."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest

from oiexec import (
    Agent,
    ConfigError,
    ExitCode,
    LocalImageInput,
    SessionError,
    TextInput,
    UsageError,
)
from oiexec.core.events import ReviewItem
from tests.api.conftest import MakeAgent, provider_config
from tests.conftest import git
from tests.support.model_server import ModelServer, reply, user_texts


def test_a_thread_resumes_in_another_agent(
    make_agent: MakeAgent, model_server: ModelServer, repo: Path
) -> None:
    model_server.enqueue(reply("first answer"), reply("second answer"), reply("third answer"))
    thread = make_agent().start_thread()
    first = thread.run("remember the word PARSNIP")
    assert first.ok and thread.id is not None

    # The same thread's next turn continues the session.
    second = thread.run("and now?")
    assert second.thread_id == thread.id

    # A different Agent (a new process would do the same) picks it up by id.
    other = Agent(config=provider_config(model_server), sandbox="danger-full-access")
    resumed = other.resume_thread(thread.id)
    third = resumed.run("which word did I ask you to remember?")

    assert third.ok and third.final_response == "third answer"
    assert resumed.id == thread.id and third.thread_id == thread.id
    history = user_texts(model_server.bodies[-1])
    assert any("PARSNIP" in text for text in history)
    assert any("and now?" in text for text in history)


def test_resuming_an_unknown_thread_raises_session_error(make_agent: MakeAgent) -> None:
    thread = make_agent().resume_thread("01a2b3c4-0000-7000-8000-000000000000")
    with pytest.raises(SessionError) as caught:
        thread.run("go on")
    assert caught.value.exit_code == 1


def test_a_wrongly_typed_config_value_raises_config_error(
    make_agent: MakeAgent, model_server: ModelServer, capfd: pytest.CaptureFixture[str]
) -> None:
    agent = make_agent(config={"model_context_window": "big"})
    with pytest.raises(ConfigError) as caught:
        agent.start_thread().run("anything")
    assert caught.value.exit_code == ExitCode.CONFIG
    assert "`model_context_window` in Agent(config=...)" in caught.value.message
    assert model_server.model_requests == []
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_usage_errors_are_raised_before_anything_runs(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    with pytest.raises(UsageError, match="no such directory"):
        make_agent(cwd=tmp_path / "missing").start_thread().run("x")
    with pytest.raises(UsageError, match="max_turns"):
        make_agent().start_thread().run("x", max_turns=0)
    with pytest.raises(UsageError, match="exactly one target"):
        make_agent().review(uncommitted=True, base="main")
    with pytest.raises(UsageError, match="unknown thread option"):
        make_agent().start_thread(sandbox_mode="read-only")
    with pytest.raises(ConfigError, match="cannot be a config value"):
        make_agent(config={"model": object()}).start_thread().run("x")
    with pytest.raises(UsageError, match=r"env\['RETRIES'\] = 3: .* are strings"):
        make_agent(env={"RETRIES": 3}).start_thread().run("x")
    with pytest.raises(UsageError, match=r"Invalid output schema \(output_schema=\): 5 is not"):
        make_agent().start_thread().run("x", output_schema={"type": 5})
    missing: list[TextInput | LocalImageInput] = [
        {"type": "text", "text": "x"},
        {"type": "local_image", "path": "/no/such.png"},
    ]
    with pytest.raises(UsageError, match=r"^local_image /no/such.png: no such file"):
        make_agent().start_thread().run(missing)
    with pytest.raises(UsageError, match="cwd: 7 is not a path"):
        make_agent(cwd=7).start_thread().run("x")
    with pytest.raises(UsageError, match="additional_directories: None is not a path"):
        make_agent(additional_directories=[None]).start_thread().run("x")


def _review_answer(path: Path, line: int, priority: int) -> str:
    finding = {
        "title": "add() subtracts",
        "body": "`add` returns `a - b`.",
        "confidence_score": 0.9,
        "priority": priority,
        "code_location": {
            "absolute_file_path": str(path),
            "line_range": {"start": line, "end": line},
        },
    }
    return json.dumps(
        {
            "findings": [finding],
            "overall_correctness": "patch is incorrect",
            "overall_explanation": "The change breaks add().",
            "overall_confidence_score": 0.8,
        }
    )


def test_review_returns_findings_and_the_gate_verdict(
    make_agent: MakeAgent, model_server: ModelServer, repo: Path
) -> None:
    (repo / "calc.py").write_text("def add(a, b):\n    return a * b\n")
    model_server.enqueue(
        reply(_review_answer(repo / "calc.py", 2, priority=0)),
        reply(_review_answer(repo / "calc.py", 2, priority=2)),
    )
    agent = make_agent(sandbox=None)

    blocked = agent.review(uncommitted=True)
    assert blocked.blocked and blocked.exit_code == ExitCode.REVIEW_BLOCKED
    [finding] = blocked.findings
    assert finding.title == "add() subtracts" and finding.priority == 0
    assert finding.location_status == "in_diff" and finding.relative_path == "calc.py"
    assert blocked.blocking == blocked.findings
    assert blocked.review is not None and blocked.review.overall_correctness == "patch is incorrect"
    assert any(isinstance(item, ReviewItem) for item in blocked.items)
    assert "add() subtracts" in blocked.text

    # A P2 finding does not block under the default gate (P1).
    passed = agent.review(uncommitted=True)
    assert passed.passed and passed.exit_code == ExitCode.SUCCESS
    assert passed.blocking == [] and len(passed.findings) == 1


def test_review_with_nothing_to_review_passes_without_the_model(
    make_agent: MakeAgent, model_server: ModelServer, repo: Path
) -> None:
    subprocess.run(["git", "status"], cwd=repo, check=True, capture_output=True)
    result = make_agent().review(uncommitted=True)
    assert result.passed and result.findings == []
    assert model_server.model_requests == []


def test_areview_reviews_a_branch_against_its_base(
    make_agent: MakeAgent, model_server: ModelServer, repo: Path
) -> None:
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "calc.py").write_text("def add(a, b):\n    return a * b\n")
    git(repo, "commit", "-qam", "multiply")
    model_server.enqueue(reply(_review_answer(repo / "calc.py", 2, priority=1)))

    result = asyncio.run(make_agent(sandbox=None).areview(base="main", fail_on="P0"))

    assert result.passed and len(result.findings) == 1  # P1 does not block at P0
    assert result.findings[0].location_status == "in_diff"
    # The model was told what to diff against.
    assert any("main" in text for text in user_texts(model_server.bodies[0]))
