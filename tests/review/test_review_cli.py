"""`interpreter review` / `interpreter exec review` end to end: the real CLI in a subprocess,
real git repositories, the scripted model server."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from oiexec.core.errors import ExitCode
from oiexec.runner.review import FALLBACK_MESSAGE
from tests.cli.test_json_failures import only_failure
from tests.conftest import CliResult, exec_args, git, run_cli
from tests.review.test_reports import validate_sarif
from tests.support.model_server import ModelServer, call, reply, tool_outputs, user_texts

REPO = Path(__file__).resolve().parents[2]
CALC_BUG = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"


def answer(*findings: dict[str, Any], verdict: str | None = None, confidence: float = 0.8) -> str:
    return json.dumps(
        {
            "findings": list(findings),
            "overall_correctness": verdict
            or ("patch is incorrect" if findings else "patch is correct"),
            "overall_explanation": "Reviewed the change." if findings else "Looks good.",
            "overall_confidence_score": confidence,
        }
    )


def finding(
    path: Path | str,
    start: int,
    end: int | None = None,
    *,
    priority: int | None = 1,
    confidence: float = 0.9,
    title: str = "[P1] add() subtracts",
    body: str = "`add` returns `a - b`.",
) -> dict[str, Any]:
    return {
        "title": title,
        "body": body,
        "confidence_score": confidence,
        "priority": priority,
        "code_location": {
            "absolute_file_path": str(path),
            "line_range": {"start": start, "end": end or start},
        },
    }


def review(
    server: ModelServer,
    repo: Path,
    *args: str,
    wire: str = "responses",
    top_level: bool = False,
    **kwargs: Any,
) -> CliResult:
    base = exec_args(server, wire=wire)
    # A review is read-only whatever `-s` says (and says so): exec's default is not given.
    base.remove("-s")
    base.remove("danger-full-access")
    if top_level:
        # `interpreter review ...` takes the same options after its own name.
        return run_cli(["review", *base[1:], *args], cwd=repo, **kwargs)
    return run_cli([*base, "review", *args], cwd=repo, **kwargs)


def developer_text(body: dict[str, Any]) -> str:
    for item in body.get("input") or body.get("messages") or []:
        if item.get("role") in {"developer", "system"}:
            content = item.get("content")
            if isinstance(content, str):
                return content
            return "".join(part.get("text", "") for part in content)
    raise AssertionError("no instructions in the request")


def review_item(result: CliResult) -> dict[str, Any]:
    items = result.items("review")
    assert len(items) == 1, result.stdout
    review: dict[str, Any] = items[0]["review"]
    return review


@pytest.fixture
def dirty_repo(repo: Path) -> Path:
    """Staged change to calc.py, unstaged change to test_calc.py, untracked notes.py."""
    (repo / "calc.py").write_text(CALC_BUG)
    git(repo, "add", "calc.py")
    with (repo / "test_calc.py").open("a") as handle:
        handle.write("# unstaged edit\n")
    (repo / "notes.py").write_text("X = 1\nY = 2\n")
    return repo


# --- targets ------------------------------------------------------------------------------


def test_uncommitted_sees_staged_unstaged_and_untracked(
    model_server: ModelServer, dirty_repo: Path
) -> None:
    repo = dirty_repo
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": "git status --porcelain"})]),
        reply(answer(finding(repo / "calc.py", 5, 6), finding(repo / "notes.py", 2, priority=2))),
    )
    result = review(model_server, repo, "--uncommitted")
    assert result.returncode == ExitCode.REVIEW_BLOCKED, result.stderr

    first = model_server.bodies[0]
    prompt = user_texts(first)[-1]
    assert "staged, unstaged and untracked" in prompt
    assert "Priority (integer)" in developer_text(first)  # the rubric replaced the prompt
    assert str(repo.resolve()) in developer_text(first)
    # The schema went out as structured output on the Responses wire.
    fmt = first["text"]["format"]
    assert fmt["type"] == "json_schema" and "overall_correctness" in fmt["schema"]["properties"]
    # The model could see all three kinds of change.
    status = next(iter(tool_outputs(model_server.bodies[1]).values()))
    assert "M  calc.py" in status and " M test_calc.py" in status and "?? notes.py" in status

    located = review_item(result)
    assert [f["location_status"] for f in located["findings"]] == ["in_diff", "in_diff"]
    assert [f["relative_path"] for f in located["findings"]] == ["calc.py", "notes.py"]
    assert located["overall_correctness"] == "patch is incorrect"
    # Like Codex, the last item is the review rendered as text.
    last = result.events[-2]["item"]
    assert last["type"] == "agent_message"
    assert last["text"].startswith("Reviewed the change.\n\nFull review comments:\n\n- [P1]")
    assert result.types()[-1] == "turn.completed"
    assert "review gate blocked: 1 finding(s) at or above P1" in result.stderr
    assert "calc.py:5-6" in result.stderr


def test_base_branch_gives_the_merge_base(model_server: ModelServer, repo: Path) -> None:
    git(repo, "switch", "-q", "-c", "feature")
    (repo / "calc.py").write_text(CALC_BUG)
    git(repo, "commit", "-qam", "add sub")
    git(repo, "switch", "-q", "main")
    (repo / "README").write_text("main moved on\n")
    git(repo, "add", "README")
    git(repo, "commit", "-qm", "docs")
    git(repo, "switch", "-q", "feature")
    merge_base = git(repo, "merge-base", "HEAD", "main").strip()

    model_server.enqueue(reply(answer(finding(repo / "calc.py", 2, priority=3))))
    result = review(model_server, repo, "--base", "main", top_level=True)
    assert result.returncode == 0, result.stderr
    prompt = user_texts(model_server.bodies[0])[-1]
    assert f"git diff {merge_base}" in prompt and "'main'" in prompt
    # Line 2 was not touched on this branch: kept, but marked.
    assert review_item(result)["findings"][0]["location_status"] == "outside_diff"


def test_commit_with_title(model_server: ModelServer, repo: Path) -> None:
    (repo / "calc.py").write_text(CALC_BUG)
    git(repo, "commit", "-qam", "add sub")
    sha = git(repo, "rev-parse", "HEAD").strip()
    (repo / "calc.py").write_text("# later, uncommitted\n")  # findings point at the commit

    model_server.enqueue(reply(answer(finding(repo / "calc.py", 6, priority=0))))
    # From outside the repository, with -C before the subcommand as Codex allows.
    base = exec_args(model_server)
    result = run_cli(
        [*base, "-C", str(repo), "review", "--commit", sha[:8], "--title", "Add sub"],
        cwd=repo.parent,
    )
    assert result.returncode == ExitCode.REVIEW_BLOCKED, result.stderr
    prompt = user_texts(model_server.bodies[0])[-1]
    assert sha in prompt and "Add sub" in prompt
    assert review_item(result)["findings"][0]["location_status"] == "in_diff"


def test_custom_instructions_from_stdin(model_server: ModelServer, repo: Path) -> None:
    instructions = "Check calc.py for arithmetic mistakes.\nBe brief.\n"
    model_server.enqueue(reply(answer(finding(repo / "calc.py", 2, priority=2))))
    result = review(model_server, repo, "-", input=instructions)
    assert result.returncode == 0, result.stderr
    assert user_texts(model_server.bodies[0])[-1] == instructions
    assert review_item(result)["findings"][0]["location_status"] == "in_file"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "Specify --uncommitted, --base, --commit, or provide custom review instructions"),
        (["--uncommitted", "--base", "main"], "cannot be used together"),
        (["--commit", "HEAD", "look at this"], "cannot be used together"),
        (["--uncommitted", "--title", "T"], "--title can only be used with --commit"),
        (["--base", "no-such-branch"], "'no-such-branch' is not a commit or branch"),
        (["--uncommitted", "--fail-on", "P7"], "--fail-on must be P0, P1, P2 or P3"),
        (["--uncommitted", "--min-confidence", "2"], "--min-confidence must be a number"),
    ],
)
def test_usage_errors_exit_2_before_any_request(
    model_server: ModelServer, repo: Path, args: list[str], message: str
) -> None:
    result = review(model_server, repo, *args)
    assert result.returncode == ExitCode.USAGE, result.stderr
    assert message in result.stderr
    assert message in only_failure(result) and model_server.bodies == []


# --- the gate -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gate", "code"),
    [
        ([], 0),
        (["--fail-on", "P2"], ExitCode.REVIEW_BLOCKED),
        (["--fail-on", "P2", "--min-confidence", "0.7"], 0),
        (["--fail-on", "p3", "--min-confidence", "0.7"], ExitCode.REVIEW_BLOCKED),
    ],
)
def test_gate_thresholds(
    model_server: ModelServer, dirty_repo: Path, gate: list[str], code: int
) -> None:
    repo = dirty_repo
    model_server.enqueue(
        reply(
            answer(
                finding(repo / "calc.py", 5, priority=2, confidence=0.6, title="[P2] a"),
                finding(repo / "calc.py", 6, priority=3, confidence=0.9, title="[P3] b"),
            )
        )
    )
    result = review(model_server, repo, "--uncommitted", *gate)
    assert result.returncode == code, result.stderr


def test_run_failure_keeps_the_exec_exit_code(model_server: ModelServer, dirty_repo: Path) -> None:
    model_server.enqueue(reply(tool_calls=[call("exec_command", {"cmd": "git diff HEAD"})]))
    sarif = dirty_repo.parent / "out.sarif"
    result = review(
        model_server, dirty_repo, "--uncommitted", "--max-turns", "1", "--sarif", str(sarif)
    )
    assert result.returncode == ExitCode.MAX_TURNS, result.stderr
    assert result.types()[-1] == "turn.failed"
    # A failed analysis, not an empty one (which would close earlier code scanning alerts).
    log = json.loads(sarif.read_text())
    validate_sarif(log)
    assert log["runs"][0]["results"] == []
    invocation = log["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False and invocation["exitCode"] == 4
    assert "turn limit" in invocation["toolExecutionNotifications"][0]["message"]["text"]


# --- robustness of the answer -------------------------------------------------------------


def test_malformed_then_corrected(model_server: ModelServer, dirty_repo: Path) -> None:
    repo = dirty_repo
    model_server.enqueue(
        reply("Overall the change looks fine to me, one small bug in add."),
        reply(answer(finding(repo / "calc.py", 5))),
    )
    result = review(model_server, repo, "--uncommitted")
    assert result.returncode == ExitCode.REVIEW_BLOCKED, result.stderr
    correction = user_texts(model_server.bodies[1])[-1]
    assert "could not be used as the review result" in correction
    assert "no JSON object found" in correction
    errors = result.items("error")
    assert len(errors) == 1 and "asking for a correction" in errors[0]["message"]
    assert review_item(result)["findings"][0]["relative_path"] == "calc.py"


def test_twice_malformed_fails_instead_of_passing(
    model_server: ModelServer, dirty_repo: Path, tmp_path: Path
) -> None:
    model_server.enqueue(reply("No issues."), reply("Still no JSON, sorry."))
    md, sarif = tmp_path / "review.md", tmp_path / "review.sarif"
    result = review(
        model_server, dirty_repo, "--uncommitted", "--markdown", str(md), "--sarif", str(sarif)
    )
    assert result.returncode == ExitCode.FAILED, result.stderr
    assert FALLBACK_MESSAGE in result.stderr
    fallback = review_item(result)
    assert fallback["overall_correctness"] == "" and fallback["findings"] == []
    assert fallback["overall_explanation"] == "Still no JSON, sorry."
    assert result.items("agent_message")[-1]["text"] == "Still no JSON, sorry."
    assert "no verdict" in md.read_text()
    # Not an empty log, which would close the code scanning alerts of earlier runs: a failed
    # analysis naming why.
    log = json.loads(sarif.read_text())
    validate_sarif(log)
    invocation = log["runs"][0]["invocations"][0]
    assert log["runs"][0]["results"] == [] and invocation["executionSuccessful"] is False
    assert FALLBACK_MESSAGE in invocation["toolExecutionNotifications"][0]["message"]["text"]
    assert len(model_server.bodies) == 2  # one correction, no more


def test_partial_answer_is_corrected(model_server: ModelServer, dirty_repo: Path) -> None:
    repo = dirty_repo
    partial = json.loads(answer(finding(repo / "calc.py", 5)))
    del partial["overall_confidence_score"]
    del partial["findings"][0]["confidence_score"]
    model_server.enqueue(reply(json.dumps(partial)), reply(answer(finding(repo / "calc.py", 5))))
    result = review(model_server, repo, "--uncommitted")
    assert result.returncode == ExitCode.REVIEW_BLOCKED, result.stderr
    correction = user_texts(model_server.bodies[1])[-1]
    assert "`overall_confidence_score` is missing" in correction
    assert "`findings[0].confidence_score` is missing" in correction


def test_loose_but_clear_answer_needs_no_correction(
    model_server: ModelServer, dirty_repo: Path
) -> None:
    loose = json.loads(answer(finding(dirty_repo / "calc.py", 5)))
    loose["findings"][0].update(priority="P0", confidence_score="90%")
    text = "Here is my review:\n```json\n" + json.dumps(loose) + "\n```\n"
    model_server.enqueue(reply(text))
    result = review(model_server, dirty_repo, "--uncommitted", "--fail-on", "P0")
    assert result.returncode == ExitCode.REVIEW_BLOCKED, result.stderr
    assert len(model_server.bodies) == 1
    item = review_item(result)["findings"][0]
    assert item["priority"] == 0 and item["confidence_score"] == pytest.approx(0.9)


# --- outputs ------------------------------------------------------------------------------


def test_every_output_from_one_run(
    model_server: ModelServer, dirty_repo: Path, tmp_path: Path
) -> None:
    repo = dirty_repo
    out = tmp_path / "out"
    summary = tmp_path / "summary.md"
    model_server.enqueue(
        reply(
            answer(
                finding(repo / "calc.py", 5, 6, body="Subtracts.\nUse `+`."),
                finding(repo / "notes.py", 1, priority=3, title="[P3] Unused X"),
                finding(repo / "gone.py", 3, priority=2, title="[P2] Ghost"),
            )
        )
    )
    result = review(
        model_server,
        repo,
        "--uncommitted",
        "--junit", str(out / "review.xml"),
        "--sarif", str(out / "review.sarif"),
        "--markdown", str(out / "review.md"),
        "-o", str(out / "review.txt"),
        env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)},
    )  # fmt: skip
    assert result.returncode == ExitCode.REVIEW_BLOCKED, result.stderr

    # SARIF: valid against the official schema, one result per finding, relative URIs.
    sarif = json.loads((out / "review.sarif").read_text())
    validate_sarif(sarif)
    results = sarif["runs"][0]["results"]
    assert len(results) == 3
    first = results[0]["locations"][0]["physicalLocation"]
    assert first["artifactLocation"]["uri"] == "calc.py"
    assert first["region"]["startLine"] == 5 and first["region"]["endLine"] == 6

    # JUnit: one case per finding; only the blocking one fails.
    suite = ET.parse(out / "review.xml").getroot()
    cases = suite.findall(".//testcase")
    assert len(cases) == 3
    failing = [c for c in cases if c.find("failure") is not None]
    assert len(failing) == 1 and "add() subtracts" in (failing[0].get("name") or "")

    markdown = (out / "review.md").read_text()
    assert "❌ blocked: 1 finding(s) at or above P1" in markdown
    assert "[P3] Unused X" in markdown and "file not found" in markdown

    text = (out / "review.txt").read_text()
    assert text == result.items("agent_message")[-1]["text"]
    assert "Full review comments:" in text

    # GitHub Actions: step summary and annotations on stderr, never on stdout.
    assert summary.read_text().startswith("# Code review")
    annotations = [line for line in result.stderr.splitlines() if line.startswith("::")]
    assert annotations[0].startswith(
        "::error file=calc.py,line=5,endLine=6,title=P1 add() subtracts::"
    )
    assert annotations[0].endswith("::Subtracts.%0AUse `+`.")
    assert annotations[1].startswith("::warning file=notes.py,line=1,endLine=1,")
    assert annotations[2].startswith("::warning title=P2 Ghost::")  # no file: it does not exist
    # stdout stays pure JSONL, every line valid against the published event schema.
    assert "::error" not in result.stdout
    schema = json.loads((REPO / "oiexec" / "schemas" / "events.schema.json").read_text())
    for event in result.events:
        jsonschema.validate(event, schema)


def test_human_mode_prints_the_review_text(model_server: ModelServer, dirty_repo: Path) -> None:
    model_server.enqueue(reply(answer()))
    args = [a for a in exec_args(model_server) if a != "--json"]
    result = run_cli([*args, "review", "--uncommitted"], cwd=dirty_repo)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Looks good.\n"
    assert "review: 0 finding(s), patch is correct" in result.stderr
    assert "sandbox" in result.stderr and "read-only" in result.stderr


def test_no_structured_output_on_the_chat_wire(model_server: ModelServer, dirty_repo: Path) -> None:
    model_server.enqueue(reply(answer()))
    result = review(
        model_server, dirty_repo, "--uncommitted", "--no-structured-output", wire="chat"
    )
    assert result.returncode == 0, result.stderr
    body = model_server.bodies[0]
    assert "response_format" not in body
    # The shape is still asked for in words.
    assert '"overall_correctness"' in developer_text(body)


# --- read-only ----------------------------------------------------------------------------


@pytest.mark.parametrize("escape", [[], ["--dangerously-bypass-approvals-and-sandbox"]])
def test_review_runs_read_only_whatever_the_flags_say(
    model_server: ModelServer, dirty_repo: Path, escape: list[str]
) -> None:
    repo = dirty_repo
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": "echo pwned > pwned.txt"})]),
        reply(answer()),
    )
    # `-s` and the config both ask for full access.
    result = review(
        model_server,
        repo,
        "-s",
        "danger-full-access",
        *escape,
        "-c",
        'sandbox_mode="danger-full-access"',
        "--uncommitted",
    )
    assert result.returncode == 0, result.stderr
    # What applies is said once, on stderr and as an `error` item before the turn.
    ignored = " and ".join(["-s danger-full-access", *escape])
    warning = f"review always runs in the read-only sandbox; ignoring {ignored}"
    assert result.stderr.count(warning) == 1
    assert [item["message"] for item in result.items("error")] == [warning]
    assert result.types()[:3] == ["thread.started", "item.completed", "turn.started"]
    assert not (repo / "pwned.txt").exists()
    command = result.items("command_execution")[0]
    assert command["status"] == "failed"
    assert "Read-only file system" in command["aggregated_output"]
