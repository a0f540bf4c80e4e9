"""`hide_agent_reasoning` does what Codex's exec does with it: the transcript leaves the
model's reasoning out; the JSONL stream keeps its `reasoning` items (Codex's JSONL processor
does not look at the key, and item ids must match). `show_raw_agent_reasoning` has nothing
to show in exec and says so."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import exec_args, run_cli
from tests.support.model_server import ModelServer, reply

THOUGHT = "weighing the two approaches"


def human_args(server: ModelServer) -> list[str]:
    return [a for a in exec_args(server) if a != "--json"]


def test_the_transcript_shows_reasoning_unless_hidden(
    model_server: ModelServer, repo: Path
) -> None:
    model_server.enqueue(reply("answer", reasoning=THOUGHT), reply("answer", reasoning=THOUGHT))
    shown = run_cli([*human_args(model_server), "x"], cwd=repo)
    assert shown.returncode == 0, shown.stderr
    assert THOUGHT in shown.stderr
    hidden = run_cli([*human_args(model_server), "-c", "hide_agent_reasoning=true", "x"], cwd=repo)
    assert hidden.returncode == 0, hidden.stderr
    assert THOUGHT not in hidden.stderr
    assert hidden.stdout == "answer\n"


def test_jsonl_keeps_reasoning_items_as_codex_does(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(reply("answer", reasoning=THOUGHT))
    args = [*exec_args(model_server), "-c", "hide_agent_reasoning=true", "x"]
    result = run_cli(args, cwd=repo)
    assert result.returncode == 0, result.stderr
    assert [i["text"] for i in result.items("reasoning")] == [THOUGHT]
    assert "has no effect" not in result.stderr


def test_show_raw_agent_reasoning_says_it_has_no_effect(
    model_server: ModelServer, repo: Path
) -> None:
    model_server.enqueue(reply("answer"))
    result = run_cli(
        [*exec_args(model_server), "-c", "show_raw_agent_reasoning=true", "x"], cwd=repo
    )
    assert result.returncode == 0, result.stderr
    assert result.items("error") == []
    assert (
        "warning: show_raw_agent_reasoning: accepted for compatibility, has no effect in exec "
        "(-c override)" in result.stderr
    )
