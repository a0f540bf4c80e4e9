"""What a batch cost (per task, in total, per successful task), and `--max-total-cost`: once
the tasks' costs reach it no further task starts, the rest are `cost_limit`, the batch exits
13 and its closing line names the limit. Shards' costs add up in a merge."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from oiexec.core.errors import ExitCode
from oiexec.output.reportfile import ReportDir
from oiexec.runner.batch.costs import TotalCost, cost_line
from oiexec.runner.batch.layout import SHARD_FILE
from oiexec.runner.batch.merge import merge_batches
from oiexec.runner.batch.record import TaskRecord
from oiexec.runner.batch.report import batch_exit_code, write_reports
from tests.batch.conftest import requests_for, run_batch, summary, write_tasks
from tests.support.model_server import ModelServer, reply, usage

PRICE = (
    *("-c", "model_pricing.input_per_mtok=2"),
    *("-c", "model_pricing.cached_input_per_mtok=0.5"),
    *("-c", "model_pricing.output_per_mtok=10"),
)
#: One task's reply: 900 fresh input tokens at $2, 300 cached at $0.50, 500 output at $10
#: per million.
TASK_COST = 0.00695


def test_max_total_cost_stops_starting_tasks_and_exits_13(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    ids = ("first", "second", "third")
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [{"id": i, "prompt": f"hi [task:{i}]", "repo": str(repo)} for i in ids],
    )
    for task_id in ids:
        model_server.route(
            f"[task:{task_id}]", reply("done", usage=usage(1200, 500, cached_input_tokens=300))
        )
    out = tmp_path / "out"
    # After `first` $0.00695 is spent, under the limit: `second` starts, and takes the total
    # past it (a running task ends at its own limits); `third` is not started.
    extra = ("--jobs", "1", "--max-total-cost", "0.01", *PRICE)
    result = run_batch(model_server, tasks, out, *extra, "--json", cwd=tmp_path)

    assert result.returncode == ExitCode.TOTAL_COST == 13, result.stderr
    data = summary(out)
    by_id = {task["id"]: task for task in data["tasks"]}
    assert [by_id[i]["status"] for i in ids] == ["success", "success", "cost_limit"]
    assert requests_for(model_server, "[task:third]") == 0  # never started
    assert by_id["first"]["cost_usd"] == by_id["second"]["cost_usd"] == TASK_COST
    assert by_id["third"]["cost_usd"] == 0
    assert "--max-total-cost $0.01" in by_id["third"]["message"]
    assert data["exit_code"] == 13
    assert data["totals"]["cost_usd"] == 2 * TASK_COST
    assert data["totals"]["cost_per_success_usd"] == TASK_COST
    assert data["totals"]["cost_limit"] == 1
    # The closing line names the limit.
    assert (
        "batch tasks: 2 of 3 task(s) succeeded; cost $0.0139, $0.0069 per successful task; "
        "--max-total-cost $0.01 reached: 1 task(s) not run"
    ) in result.stderr
    # junit.xml: the total as properties, the unstarted task skipped, saying why.
    root = ElementTree.parse(out / "junit.xml").getroot()
    properties = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert properties == {"cost_usd": "0.0139", "cost_per_success_usd": "0.00695"}
    [third] = [case for case in root.iter("testcase") if case.get("name") == "third"]
    skipped = third.find("skipped")
    assert skipped is not None and "--max-total-cost" in (skipped.get("message") or "")
    # The task's own report has its cost; the --json stream has each task's and the total.
    task_root = ElementTree.parse(out / "first" / "junit.xml").getroot()
    assert {p.get("name"): p.get("value") for p in task_root.iter("property")}[
        "cost_usd"
    ] == "0.00695"
    events = [json.loads(line) for line in result.stdout.splitlines()]
    completed = {e["id"]: e for e in events if e["type"] == "task.completed"}
    assert completed["first"]["cost_usd"] == TASK_COST
    assert completed["third"]["status"] == "cost_limit"
    assert events[-1]["type"] == "batch.completed" and events[-1]["cost_usd"] == 2 * TASK_COST
    assert events[-1]["exit_code"] == 13


def _record(index: int, task_id: str, status: str, cost: float | None) -> TaskRecord:
    return TaskRecord(index=index, id=task_id, status=status, cost_usd=cost)


def _shard(path: Path, records: list[TaskRecord], every: list[str]) -> Path:
    out = ReportDir.open(path)
    try:
        write_reports(out, "nightly", records)
        out.write(SHARD_FILE, json.dumps({"batch_tasks": every}))
    finally:
        out.close()
    return path


def test_a_merge_adds_the_shards_costs_and_keeps_the_cost_limit(tmp_path: Path) -> None:
    every = ["a", "b", "c", "d"]
    one = _shard(
        tmp_path / "one", [_record(0, "a", "success", 0.25), _record(2, "c", "failed", 0.5)], every
    )
    two = _shard(
        tmp_path / "two",
        [_record(1, "b", "success", 0.125), _record(3, "d", "cost_limit", 0.0)],
        every,
    )
    notes: list[str] = []

    code = merge_batches([one, two], tmp_path / "merged", note=notes.append)

    assert code == ExitCode.TOTAL_COST
    totals = json.loads((tmp_path / "merged" / "summary.json").read_text())["totals"]
    assert totals["cost_usd"] == 0.875
    assert totals["cost_per_success_usd"] == 0.4375
    assert notes[-1] == (
        "batch nightly: 2 of 4 task(s) succeeded; cost $0.8750, $0.4375 per successful task; "
        "--max-total-cost reached: 1 task(s) not run"
    )


def test_totals_with_an_unknown_cost_and_the_exit_code_order() -> None:
    known = _record(0, "a", "success", 0.5)
    unknown = _record(1, "b", "failed", None)
    assert cost_line("n", [known, unknown]) == (
        "batch n: 1 of 2 task(s) succeeded; cost unknown, unknown per successful task"
    )
    assert cost_line("n", [_record(0, "a", "failed", 0.5)]) == (
        "batch n: 0 of 1 task(s) succeeded; cost $0.5000"
    )
    stopped = _record(2, "c", "cost_limit", 0.0)
    assert batch_exit_code([known, stopped]) == ExitCode.TOTAL_COST
    # An interrupt is said first: a rerun starts what it stopped.
    assert batch_exit_code([known, stopped, _record(3, "d", "not_run", 0.0)]) == 130
    assert batch_exit_code([known]) == 0


@pytest.mark.parametrize(
    ("charged", "refused"),
    [
        ([], None),
        ([("a", "success", 0.75)], None),
        ([("a", "success", 0.75), ("b", "failed", 0.25)], "reached --max-total-cost $1"),
        # Unstarted tasks cost nothing and say nothing; a finished one of unknown cost stops
        # the batch: the limit could no longer be kept.
        ([("a", "cost_limit", None), ("b", "not_run", None)], None),
        ([("a", "success", None)], "the cost of task 'a' is unknown"),
    ],
)
def test_total_cost_refuses_a_start_once_spent_or_unknowable(
    charged: list[tuple[str, str, float | None]], refused: str | None
) -> None:
    budget = TotalCost(1.0)
    for index, (task_id, status, cost) in enumerate(charged):
        budget.charge(_record(index, task_id, status, cost))
    refusal = budget.refusal()
    if refused is None:
        assert refusal is None
    else:
        assert refusal is not None and refused in refusal
    assert TotalCost(None).refusal() is None  # no limit, nothing refused
