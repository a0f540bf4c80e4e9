"""An unknown `OIEXEC_` variable is a one-line note on stderr, never an `error` item in the
JSONL stream: a Codex SDK consumer must not see an error for a variable in its CI's
environment (issue 23)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.batch.conftest import run_batch, write_tasks
from tests.conftest import CliResult, exec_args, run_cli
from tests.review.test_review_cli import answer
from tests.support.model_server import ModelServer, reply

ENV = {"OIEXEC_BOGUS": "1"}


def assert_noted(result: CliResult) -> None:
    assert result.returncode == 0, result.stderr
    errors = [json.dumps(item) for item in result.items("error")]
    assert not [text for text in errors if "BOGUS" in text.upper()], errors
    noted = [line for line in result.stderr.splitlines() if "OIEXEC_BOGUS" in line]
    assert len(noted) == 1, result.stderr
    assert "unknown config key `bogus`" in noted[0]
    assert "Traceback" not in result.stderr


def test_exec_notes_an_unknown_variable_on_stderr_only(
    model_server: ModelServer, repo: Path
) -> None:
    model_server.enqueue(reply("ok"))
    result = run_cli([*exec_args(model_server), "hi"], cwd=repo, env=ENV)
    assert_noted(result)
    assert result.types()[0] == "thread.started"


def test_review_notes_an_unknown_variable_on_stderr_only(
    model_server: ModelServer, repo: Path
) -> None:
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    model_server.enqueue(reply(answer()))
    base = [arg for arg in exec_args(model_server) if arg not in {"-s", "danger-full-access"}]
    result = run_cli(["review", *base[1:], "--uncommitted"], cwd=repo, env=ENV)
    assert_noted(result)
    assert result.items("review"), result.stdout


def test_batch_task_notes_an_unknown_variable_in_its_stderr_log_only(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", [{"id": "one", "prompt": "hi", "repo": "."}])
    model_server.enqueue(reply("ok"))
    out = tmp_path / "out"
    result = run_batch(model_server, tasks, out, cwd=repo, env=ENV)
    assert result.returncode == 0, result.stderr
    events = (out / "one" / "events.jsonl").read_text()
    assert "OIEXEC_BOGUS" not in events and '"type":"error"' not in events.replace(" ", "")
    log = (out / "one" / "stderr.log").read_text()
    assert len([line for line in log.splitlines() if "OIEXEC_BOGUS" in line]) == 1, log
