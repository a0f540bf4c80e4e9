"""Shared set-up for the batch tests: task files, a second repository, and running
`interpreter batch` against the scripted model server."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult, git, run_cli
from tests.support.model_server import ModelServer


def write_tasks(path: Path, tasks: Sequence[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(task) + "\n" for task in tasks))
    return path


def batch_args(server: ModelServer, tasks: Path, out: Path, *extra: str) -> list[str]:
    return [
        "batch",
        str(tasks),
        "--out",
        str(out),
        "-s",
        "danger-full-access",
        *server.config_args(request_max_retries=0),
        *extra,
    ]


def run_batch(
    server: ModelServer, tasks: Path, out: Path, *extra: str, cwd: Path, **kw: Any
) -> CliResult:
    return run_cli(batch_args(server, tasks, out, *extra), cwd=cwd, **kw)


def requests_for(server: ModelServer, marker: str) -> int:
    """How many model requests belonged to the task whose prompt holds `marker`."""
    return sum(marker in json.dumps(request.body) for request in server.model_requests)


def summary(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return data


def statuses(out: Path) -> dict[str, str]:
    return {task["id"]: task["status"] for task in summary(out)["tasks"]}


def source_state(repo: Path) -> tuple[str, str, str]:
    """HEAD, status and staged diff: what a batch must leave as it found it."""
    return (
        git(repo, "rev-parse", "HEAD"),
        git(repo, "status", "--porcelain"),
        git(repo, "diff", "--cached"),
    )


@pytest.fixture
def repo2(tmp_path: Path) -> Path:
    """A second repository with one text file."""
    path = tmp_path / "repo2"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "notes.txt").write_text("one\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path
