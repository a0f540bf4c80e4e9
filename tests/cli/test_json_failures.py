"""With `--json`, every failure after the flags parse leaves a line on stdout: a consumer
reading only stdout (the Codex SDK, a batch reading a task's events) learns why. A run that
ended its own stream is not given a second terminal event."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.batch.conftest import run_batch, summary, write_tasks
from tests.conftest import CliResult, exec_args, run_cli
from tests.support.model_server import ModelServer, fault

UNKNOWN_SESSION = "0199a213-81c0-7800-8aa1-bbab2a035a53"


def only_failure(result: CliResult) -> str:
    """The message of the stream's single line, a `turn.failed`."""
    assert result.types() == ["turn.failed"], result.stdout
    message: str = result.events[0]["error"]["message"]
    assert message.splitlines()[0] in result.stderr  # the same error as on stderr
    assert "Traceback" not in result.stderr
    return message


def test_a_config_value_a_flag_overrides_is_an_error_and_on_stdout(
    model_server: ModelServer, repo: Path
) -> None:
    args = [*exec_args(model_server), "-c", "sandbox_mode=bogus", "-s", "workspace-write", "go"]
    result = run_cli(args, cwd=repo)
    assert result.returncode == 3, result.stderr
    message = only_failure(result)
    assert "`sandbox_mode` in -c override: expected one of " in message
    assert "'read-only', 'workspace-write' or 'danger-full-access'" in message
    assert 'got the string "bogus" (overridden by -s' in message
    assert model_server.bodies == []


@pytest.mark.parametrize(
    ("command", "code", "said"),
    [
        (["exec", "--json", "resume", UNKNOWN_SESSION, "go"], 1, UNKNOWN_SESSION),
        (["resume", "--json"], 2, "needs a SESSION_ID or --last"),
        (["review", "--json"], 2, "Specify --uncommitted, --base, --commit"),
    ],
    ids=["exec-resume", "resume", "review"],
)
def test_resume_and_review_failures_before_the_run_end_the_stream(
    model_server: ModelServer, repo: Path, command: list[str], code: int, said: str
) -> None:
    result = run_cli([*command, *model_server.config_args()], cwd=repo)
    assert result.returncode == code, result.stderr
    assert said in only_failure(result)
    assert model_server.bodies == []


def test_a_run_that_failed_itself_has_one_terminal_event(
    model_server: ModelServer, repo: Path
) -> None:
    model_server.enqueue(fault(500, message="boom"))
    args = [*exec_args(model_server, request_max_retries=0), "go"]
    result = run_cli(args, cwd=repo)
    assert result.returncode == 1, result.stderr
    types = result.types()
    assert types[0] == "thread.started" and types[-1] == "turn.failed", types
    assert types.count("turn.failed") == 1


def test_a_batch_task_whose_exec_fails_before_its_run_says_why(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    """The task's events.jsonl ends with the child's `turn.failed`, which the summary reads."""
    tasks = write_tasks(tmp_path / "tasks.jsonl", [{"id": "t", "prompt": "x", "model": " "}])
    out = tmp_path / "out"
    result = run_batch(model_server, tasks, out, cwd=repo)
    assert result.returncode == 1, result.stderr
    events = (out / "t" / "events.jsonl").read_text().splitlines()
    assert [json.loads(line)["type"] for line in events] == ["turn.failed"]
    assert "-m/--model needs a value" in summary(out)["tasks"][0]["message"]
    assert model_server.bodies == []
