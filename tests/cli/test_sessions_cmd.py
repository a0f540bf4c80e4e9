"""`interpreter sessions list` and `sessions show`: what a pipeline reads to decide what to
resume."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from oiexec.session.store import RolloutStore
from tests.conftest import CliResult, exec_args, run_cli
from tests.support.model_server import ModelServer, call, reply, usage

PRICE = ("-c", "model_pricing.input_per_mtok=2", "-c", "model_pricing.output_per_mtok=10")


@pytest.fixture
def sessions(
    model_server: ModelServer, repo: Path, tmp_path: Path, oi_home: Path
) -> dict[str, Any]:
    """Three sessions: one that completed (then was resumed) and one that hit --max-turns in
    `repo`, one that completed elsewhere; and a fourth whose run was killed."""
    other = tmp_path / "other"
    other.mkdir()
    model_server.enqueue(
        reply(
            tool_calls=[call("exec_command", {"cmd": "echo hi"})],
            usage=usage(input_tokens=100, output_tokens=7),
        ),
        reply("done", usage=usage(input_tokens=50, output_tokens=3)),
        reply("resumed"),
        reply(tool_calls=[call("exec_command", {"cmd": "true"})]),
        reply("elsewhere"),
    )
    # Priced in config ($2 input, $10 output per million tokens): the costs below are exact.
    priced = [*exec_args(model_server), *PRICE]
    done = run_cli([*priced, "fix the adder"], cwd=repo)
    assert done.returncode == 0, done.stderr
    done_id = done.events[0]["thread_id"]
    resumed = run_cli([*priced, "resume", done_id, "and again"], cwd=repo)
    assert resumed.returncode == 0, resumed.stderr
    # 150 input and 10 output tokens cost $0.0004; the resume's 10 and 5 $0.00007.
    assert done.events[-1]["cost_usd"] == done.events[-1]["session_cost_usd"] == 0.0004
    assert resumed.events[-1]["cost_usd"] == 0.00007
    assert resumed.events[-1]["session_cost_usd"] == 0.00047
    limited = run_cli([*exec_args(model_server), "--max-turns", "1", "loop forever"], cwd=repo)
    assert limited.returncode == 4, limited.stderr
    away = run_cli([*exec_args(model_server), "--skip-git-repo-check", "somewhere else"], cwd=other)
    assert away.returncode == 0, away.stderr
    # A run killed before it could record how it ended.
    with RolloutStore.create(
        oi_home, cwd=repo, model_provider="scripted", cli_version="0", base_instructions=None
    ) as killed:
        killed.append("turn_context", {"cwd": str(repo), "model": "gpt-5.5"})
        killed.append("response_item", {"kind": "message", "role": "user", "text": "killed task"})
        killed_id = killed.thread_id
    return {
        "done": done_id,
        "limited": limited.events[0]["thread_id"],
        "away": away.events[0]["thread_id"],
        "killed": killed_id,
        "other": other,
    }


def _json(result: CliResult) -> Any:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_list_this_directory_newest_first_or_all(
    sessions: dict[str, Any], repo: Path, tmp_path: Path
) -> None:
    rows = _json(run_cli(["sessions", "list", "--json"], cwd=repo))["sessions"]
    by_id = {row["id"]: row for row in rows}
    assert [row["id"] for row in rows] == [
        sessions["killed"],
        sessions["limited"],
        sessions["done"],
    ]
    done = by_id[sessions["done"]]
    assert done["runs"] == 2 and done["status"] == "completed" and done["exit_code"] == 0
    assert done["first_prompt"] == "fix the adder"
    assert done["model"] == "gpt-5.5" and done["model_provider"] == "scripted"
    assert done["cwd"] == str(repo)
    assert done["cost_usd"] == 0.00047  # both runs
    limited = by_id[sessions["limited"]]
    assert (limited["status"], limited["exit_code"]) == ("failed", 4)
    killed = by_id[sessions["killed"]]
    assert (killed["status"], killed["exit_code"]) == ("incomplete", None)
    assert killed["cost_usd"] is None  # a killed run recorded no cost

    table = run_cli(["sessions", "list"], cwd=repo)
    assert table.returncode == 0, table.stderr
    header, *lines = table.stdout.splitlines()
    assert header.split() == ["ID", "UPDATED", "MODEL", "RUNS", "OUTCOME", "COST", "PROMPT"]
    assert lines[0].startswith(sessions["killed"])
    assert lines[0].split()[5:7] == ["incomplete", "unknown"]
    assert "failed (4)" in lines[1] and "loop forever" in lines[1]
    assert lines[2].split()[5:9] == ["completed", "(0)", "$0.0005", "fix"]

    every = _json(run_cli(["sessions", "list", "--json", "--all"], cwd=tmp_path))["sessions"]
    assert {row["id"] for row in every} == {
        sessions["done"], sessions["limited"], sessions["away"], sessions["killed"]
    }  # fmt: skip
    newest = _json(run_cli(["sessions", "list", "--json", "-n", "1"], cwd=repo))["sessions"]
    assert [row["id"] for row in newest] == [sessions["killed"]]
    there = _json(run_cli(["sessions", "list", "--json", "-C", str(sessions["other"])], cwd=repo))
    assert [row["id"] for row in there["sessions"]] == [sessions["away"]]
    table = run_cli(["sessions", "list", "--all"], cwd=tmp_path)
    assert "CWD" in table.stdout.splitlines()[0] and str(sessions["other"]) in table.stdout
    empty = run_cli(["sessions", "list"], cwd=tmp_path)
    assert empty.returncode == 0 and empty.stdout == ""
    assert f"no sessions in {tmp_path}" in empty.stderr


def test_show_has_settings_runs_items_usage_and_outcome(
    sessions: dict[str, Any], repo: Path
) -> None:
    detail = _json(run_cli(["sessions", "show", "--json", sessions["done"]], cwd=repo))
    assert detail["id"] == sessions["done"]
    assert detail["settings"]["sandbox_mode"] == "danger-full-access"
    assert detail["settings"]["model"] == "gpt-5.5"
    assert len(detail["runs"]) == 2 and "turns" not in detail
    assert (detail["status"], detail["exit_code"], detail["last_message"]) == (
        "completed", 0, "resumed"
    )  # fmt: skip
    assert detail["usage"]["input_tokens"] == 100 + 50 + 10
    assert detail["cost_usd"] == 0.00047
    first, second = detail["runs"]
    assert (first["cost_usd"], second["cost_usd"]) == (0.0004, 0.00007)
    assert first["prompt"] == "fix the adder" and second["prompt"] == "and again"
    commands = [i for i in first["items"] if i["type"] == "command_execution"]
    assert "echo hi" in commands[0]["command"] and commands[0]["exit_code"] == 0
    assert [i["text"] for i in first["items"] if i["type"] == "agent_message"] == ["done"]

    limited = _json(run_cli(["sessions", "show", "--json", sessions["limited"]], cwd=repo))
    assert (limited["status"], limited["exit_code"]) == ("failed", 4)
    assert "max-turns" in limited["failure"] or "turn" in limited["failure"]

    text = run_cli(["sessions", "show", sessions["killed"]], cwd=repo)
    assert text.returncode == 0, text.stderr
    assert "outcome: incomplete" in text.stdout
    assert "turn 1: incomplete: killed task" in text.stdout
    assert "cost: unknown" in text.stdout


def test_show_unknown_id_exits_1(repo: Path) -> None:
    missing = "01a23633-9971-7106-8a4b-f1c59b9b610b"
    result = run_cli(["sessions", "show", missing], cwd=repo)
    assert result.returncode == 1
    assert f"no rollout found for thread id {missing}" in result.stderr
    assert "sessions list --all" in result.stderr
