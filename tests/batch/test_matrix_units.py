"""Matrix runs in-process: `--matrix`/`--repeat` parsing, the expansion into runs and their
ids, pass@k against hand computations, the per-combination numbers, the Markdown with its
Mermaid charts, and `--compare`'s order. Plus the usage errors through the CLI (no model)."""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oiexec.core.errors import UsageError
from oiexec.runner.batch.matrix import Matrix, expand, parse_matrix, run_id
from oiexec.runner.batch.matrix_report import compare_rows, markdown
from oiexec.runner.batch.matrix_stats import matrix_section, pass_at_k
from oiexec.runner.batch.plan import input_hash
from oiexec.runner.batch.record import TaskRecord, checked_record
from oiexec.runner.batch.tasks import Task, check_id
from tests.batch.conftest import write_tasks
from tests.conftest import run_cli


def _tasks(*ids: str) -> list[Task]:
    return [Task(index=i, id=task_id, prompt="p") for i, task_id in enumerate(ids)]


def test_parse_matrix_keeps_the_order_given() -> None:
    matrix = parse_matrix(["model=gpt-5.5, claude-sonnet-4-5", "harness=native"], 3)
    assert matrix.axes == (("model", ("gpt-5.5", "claude-sonnet-4-5")), ("harness", ("native",)))
    assert matrix.repeat == 3 and matrix.used
    assert not parse_matrix([], None).used


@pytest.mark.parametrize(
    ("specs", "repeat", "says"),
    [
        (["temperature=1,2"], None, "KEY one of model, harness, profile"),
        (["model"], None, "expected KEY=VALUE"),
        (["model=a", "model=b"], None, "given twice"),
        (["model=a,,b"], None, "is empty"),
        (["model=a,a"], None, "a value is given twice"),
        (["model=a\nb"], None, "control character"),
        (["harness=native,natve"], None, "unknown harness 'natve'"),
        ([], 101, "--repeat must be between 1 and 100"),
    ],
)
def test_parse_matrix_refuses_what_it_cannot_run(
    specs: list[str], repeat: int | None, says: str
) -> None:
    with pytest.raises(UsageError, match=re.escape(says)):
        parse_matrix(specs, repeat)


def test_expansion_is_task_then_combination_then_repeat() -> None:
    matrix = parse_matrix(["model=a,b", "harness=native,claude-code"], 2)
    runs = expand(_tasks("t1", "t2"), matrix)
    assert len(runs) == 16
    assert [run.index for run in runs] == list(range(16))
    assert [run.id for run in runs[:5]] == [
        "t1.a.native.r1",
        "t1.a.native.r2",
        "t1.a.claude-code.r1",
        "t1.a.claude-code.r2",
        "t1.b.native.r1",
    ]
    run = runs[-1]
    assert (run.id, run.base_id, run.model, run.harness, run.repeat) == (
        "t2.b.claude-code.r2",
        "t2",
        "b",
        "claude-code",
        2,
    )
    # Each run's inputs differ (the combination is hashed), a plain task's hash is unchanged.
    assert len({input_hash(run, [], None) for run in runs[:4]}) == 4
    plain = _tasks("t1")[0]
    assert "matrix" not in plain.canonical()
    assert expand([plain], Matrix()) == [plain]


def test_repeat_alone_numbers_the_runs() -> None:
    runs = expand(_tasks("fix"), parse_matrix([], 3))
    assert [run.id for run in runs] == ["fix.r1", "fix.r2", "fix.r3"]
    assert all(run.combination == () for run in runs)


def test_ids_stay_directory_names_and_distinct_whatever_the_model_is_called() -> None:
    odd = ["openai/gpt-5:latest", "openai:gpt-5/latest", "../../etc", "x" * 200, "模型"]
    ids = [run_id("task", [("model", value)], 1) for value in odd]
    assert len(set(ids)) == len(ids)
    assert all(check_id(i) is None for i in ids), ids
    long = run_id("t" * 128, [("model", "m" * 200), ("harness", "native")], 3)
    assert check_id(long) is None and long.endswith(".r3")
    assert run_id("t", [("model", "gpt-5.5")], 2) == "t.gpt-5.5.r2"  # stable


def test_a_task_setting_a_varied_key_is_an_error_naming_it() -> None:
    tasks = [Task(index=0, id="a", prompt="p"), Task(index=1, id="b", prompt="p", model="m")]
    with pytest.raises(UsageError, match="task 'b' sets `model`, which --matrix varies"):
        expand(tasks, parse_matrix(["model=x,y"], None))
    # A key the matrix does not vary stays the task's.
    runs = expand(tasks, parse_matrix(["harness=native"], None))
    assert runs[1].model == "m"


def test_pass_at_k_matches_hand_computation() -> None:
    # n=3, c=1: one success in three; any 2 of 3 hold it with chance 2/3; all 3 always.
    assert [pass_at_k(3, 1, k) for k in (1, 2, 3)] == [Fraction(1, 3), Fraction(2, 3), 1]
    # n=5, c=2, k=2: 1 - C(3,2)/C(5,2) = 1 - 3/10.
    assert pass_at_k(5, 2, 2) == Fraction(7, 10)
    assert pass_at_k(4, 0, 2) == 0 and pass_at_k(4, 4, 1) == 1
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def _run(index: int, task: str, model: str, repeat: int, status: str, **kw: Any) -> TaskRecord:
    return TaskRecord(
        index=index,
        id=f"{task}.{model}.r{repeat}",
        status=status,
        exit_code={"success": 0, "check_failed": 8}.get(status),
        task=task,
        combination={"model": model},
        repeat=repeat,
        **kw,
    )


def test_section_counts_runs_that_ended_and_averages_over_tasks() -> None:
    records = [
        _run(0, "t1", "a", 1, "success", turns=2, cost_usd=0.5, duration_s=1.0),
        _run(1, "t1", "a", 2, "check_failed", turns=1, cost_usd=0.25, duration_s=3.0),
        _run(2, "t2", "a", 1, "check_failed", turns=1, cost_usd=0.25, duration_s=2.0),
        # Never started: no sample, so t2 counts for pass@1 only.
        _run(3, "t2", "a", 2, "not_run", cost_usd=0.0),
        _run(4, "t1", "b", 1, "success", cost_usd=None),
        _run(5, "t1", "b", 2, "success", cost_usd=0.1),
    ]
    section = matrix_section(records)
    assert section is not None
    assert section["axes"] == {"model": ["a", "b"]} and section["repeat"] == 2
    a, b = section["combinations"]
    # t1: n=2, c=1 -> pass@1 1/2, pass@2 1; t2: n=1, c=0 -> pass@1 0.
    assert a["pass_at"] == {"1": 0.25, "2": 1.0}
    assert (a["tasks"], a["runs"], a["solved_runs"], a["solved_tasks"]) == (2, 3, 1, 1)
    assert (a["mean_turns"], a["mean_duration_s"]) == (1.333, 2.0)
    assert (a["cost_usd"], a["cost_per_success_usd"]) == (1.0, 1.0)
    assert a["failure_classes"]["task"] == 2 and a["failure_classes"]["interrupted"] == 1
    assert b["pass_at"] == {"1": 1.0, "2": 1.0}
    assert b["cost_usd"] is None and b["cost_per_success_usd"] is None  # one cost unknown
    assert matrix_section([TaskRecord(index=0, id="plain", status="success")]) is None


def _section(*combos: tuple[str, float, float, float | None]) -> dict[str, Any]:
    return {
        "repeat": 3,
        "combinations": [
            {
                "combination": {"model": label},
                "label": f"model={label}",
                "tasks": 4,
                "runs": 12,
                "solved_runs": 6,
                "solved_tasks": 3,
                "pass_at": {"1": p1, "2": p3, "3": p3},
                "mean_turns": 1.5,
                "mean_duration_s": 2.0,
                "cost_usd": 0.1,
                "cost_per_success_usd": cost,
                "failure_classes": {"transient": 1, "task": 0},
            }
            for label, p1, p3, cost in combos
        ],
    }


def test_markdown_opens_with_valid_charts_whatever_the_labels() -> None:
    hostile = 'ev"il]\n```\n| x <b>'
    text = markdown("nightly", _section((hostile, 0.5, 0.75, 0.01), ("ok", 0.25, 0.5, None)))
    assert text.splitlines()[2:4] == ["```mermaid", "xychart-beta"]
    blocks = re.findall(r"```mermaid\n(.*?)\n```", text, re.S)
    assert len(blocks) == 2
    for block in blocks:
        axis = re.search(r"x-axis \[(.*)\]", block)
        assert axis is not None
        labels = re.findall(r'"([^"]*)"', axis.group(1))
        assert len(labels) == 2 and all("\n" not in label for label in labels)
        values = re.search(r"bar \[(.*)\]", block)
        assert values is not None and len(values.group(1).split(", ")) == 2
    assert "bar [50, 25]" in blocks[0] and "line [75, 50]" in blocks[0]
    assert "bar [0.01, 0]" in blocks[1]  # unknown is drawn as 0 ...
    assert "| model=ok | 4 | 3 | 12 | 6 | 25.0% | 50.0% | 50.0% |" in text
    assert "| $0.1000 | – | 1 transient |" in text  # ... and shown as unknown in the table
    assert "<b>" not in text and text.count("```") == 4


@given(st.text(max_size=80))
def test_any_label_keeps_mermaid_and_tables_intact(label: str) -> None:
    text = markdown("n", _section((label, 0.5, 0.5, 0.1)))
    assert text.count("```") == 4 and text.count("\n") == 22
    table_row = text.splitlines()[-1]
    assert table_row.count("|") == 14


def test_compare_lists_regressions_first_worst_first() -> None:
    old = _section(
        ("a", 0.5, 0.75, 0.01), ("b", 0.5, 0.75, 0.01), ("c", 0.5, 0.5, 0.01), ("gone", 1, 1, 0.1)
    )
    new = _section(
        ("a", 0.6, 0.8, 0.01), ("b", 0.25, 0.75, 0.01), ("c", 0.4, 0.5, 0.01), ("new", 1, 1, 0.1)
    )
    rows = compare_rows(new, old)
    assert [(label, regressed) for label, _, regressed in rows] == [
        ("model=b", True),
        ("model=c", True),
        ("model=a", False),
        ("model=new", False),
        ("model=gone", False),
    ]
    assert rows[0][1][0] == "50.0% → 25.0% (-25.0)"
    costlier = compare_rows(_section(("a", 0.5, 0.5, 0.02)), _section(("a", 0.5, 0.5, 0.01)))
    assert costlier[0][2] is True  # cost per success rose: a regression too


def test_summary_entries_with_bad_matrix_fields_are_refused() -> None:
    entry = {"index": 0, "id": "t.r1", "status": "success", "task": "t", "repeat": 1}
    assert checked_record({**entry, "combination": {"model": "m"}}).combination == {"model": "m"}
    for bad in (
        {"combination": {"seed": "1"}},
        {"combination": {"model": "a\nb"}},
        {"repeat": 0},
        {"task": "../x"},
    ):
        with pytest.raises(ValueError):
            checked_record({**entry, **bad})


def test_report_and_matrix_usage_errors_exit_2_without_traceback(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    entry = {"index": 0, "id": "t", "status": "success"}
    (plain / "summary.json").write_text(json.dumps({"batch": "b", "tasks": [entry]}))
    (tmp_path / "empty").mkdir()
    tasks = write_tasks(tmp_path / "tasks.jsonl", [{"id": "t", "prompt": "p", "model": "m"}])
    cases = [
        (["batch", "report", str(plain)], "no matrix run"),
        (["batch", "report", str(tmp_path / "empty")], "has no summary.json"),
        (["batch", "report", str(tmp_path / "nowhere")], "does not exist"),
        (["batch", str(tasks), "--out", str(tmp_path / "o"), "--matrix", "seed=1"], "KEY one of"),
        (["batch", str(tasks), "--out", str(tmp_path / "o"), "--repeat", "0"], "--repeat"),
        (
            ["batch", str(tasks), "--out", str(tmp_path / "o"), "--matrix", "model=a,b"],
            "sets `model`",
        ),
    ]
    for argv, says in cases:
        result = run_cli(argv, cwd=tmp_path)
        assert result.returncode == 2, (argv, result.stderr)
        assert says in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_junit_has_a_suite_per_combination_and_keeps_runs_without_one() -> None:
    import xml.etree.ElementTree as ET

    from oiexec.runner.batch.report import render

    records = [
        _run(0, "t1", "a", 1, "success"),
        _run(1, "t1", "b", 1, "check_failed"),
        TaskRecord(index=2, id="t1.c.r1", status="missing"),
    ]
    summary_text, junit = render("nightly", records)
    suites = ET.fromstring(junit).findall("testsuite")
    assert [s.get("name") for s in suites] == [
        "nightly [model=a]",
        "nightly [model=b]",
        "nightly",
    ]
    props = {p.get("name"): p.get("value") for p in suites[0].iter("property")}
    assert props["pass_at_1"] == "1"
    failure = suites[1].find("testcase/failure")
    assert failure is not None and failure.get("type") == "task"
    assert json.loads(summary_text)["totals"]["failure_classes"]["task"] == 1
