"""`review_model` is the model `exec review` asks, as in Codex; `-m` on the review wins."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli
from tests.review.test_review_cli import answer, dirty_repo, review
from tests.support.model_server import ModelServer, reply

__all__ = ["dirty_repo"]  # the fixture, used by name below


def test_review_asks_the_review_model_and_exec_the_model(
    model_server: ModelServer, dirty_repo: Path, oi_home: Path
) -> None:
    (oi_home / "config.toml").write_text('model = "everyday"\nreview_model = "careful-reviewer"\n')
    model_server.enqueue(reply(answer()), reply("done"))
    reviewed = review(model_server, dirty_repo, "--uncommitted")
    assert reviewed.returncode == 0, reviewed.stderr
    assert model_server.model_requests[0].body["model"] == "careful-reviewer"
    args = ["exec", "--json", "-s", "danger-full-access", *model_server.config_args(), "x"]
    ran = run_cli(args, cwd=dirty_repo)
    assert ran.returncode == 0, ran.stderr
    assert model_server.model_requests[1].body["model"] == "everyday"


def test_m_on_the_review_command_line_beats_review_model(
    model_server: ModelServer, dirty_repo: Path, oi_home: Path
) -> None:
    (oi_home / "config.toml").write_text('review_model = "careful-reviewer"\n')
    model_server.enqueue(reply(answer()))
    reviewed = review(model_server, dirty_repo, "--uncommitted", "-m", "chosen-now")
    assert reviewed.returncode == 0, reviewed.stderr
    assert model_server.model_requests[0].body["model"] == "chosen-now"
