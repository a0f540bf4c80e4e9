"""A 4-task x 2-model x 2-harness x 3-repeat matrix through the real CLI and the scripted
model server, whose answers make each combination's pass rates known in advance: the report's
numbers are checked exactly (pass@k against a hand computation), a rerun resumes, and the
same matrix run in two shards and merged reports the same numbers.

One matrix run and one sharded pair (96 task runs, 1-2 model turns each): the slowest batch
test, listed in SLOW_FIRST.
"""

from __future__ import annotations

import json
import re
import threading
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from oiexec.core.errors import FAILURE_CLASSES
from tests.batch.conftest import run_batch, summary, write_tasks
from tests.conftest import run_cli
from tests.support.model_server import (
    ModelServer,
    Step,
    call,
    fault,
    reply,
    tool_names,
    tool_outputs,
    usage,
)

MODELS = ("m-alpha", "m-beta")
HARNESSES = ("native", "claude-code")
TASKS = ("t1", "t2", "t3", "t4")
REPEAT = 3
#: Runs (of 3) of each task that solve it, per (model, harness); m-beta on native answers
#: t4 with an HTTP 500 (a transient failure) every time.
SOLVED = {
    ("m-alpha", "native"): (3, 2, 1, 0),
    ("m-alpha", "claude-code"): (3, 3, 0, 0),
    ("m-beta", "native"): (1, 1, 1, 0),
    ("m-beta", "claude-code"): (2, 0, 0, 3),
}
TRANSIENT = ("m-beta", "native", "t4")
#: pass@1, pass@2, pass@3 of one task run 3 times with c successes, worked out by hand:
#: pass@k = 1 - C(3-c, k) / C(3, k). c=1: 1 - 2/3, 1 - 1/3, 1 - 0/1; c=2: 1 - 1/3, 1 - 0, 1.
HAND = {
    0: (Fraction(0), Fraction(0), Fraction(0)),
    1: (Fraction(1, 3), Fraction(2, 3), Fraction(1)),
    2: (Fraction(2, 3), Fraction(1), Fraction(1)),
    3: (Fraction(1), Fraction(1), Fraction(1)),
}
PRICING = (
    *("-c", "model_pricing.input_per_mtok=2"),
    *("-c", "model_pricing.output_per_mtok=10"),
)
#: Each answered request: 1000 input and 100 output tokens = $0.002 + $0.001.
REQUEST_COST = 0.003
#: Seconds one matrix run may take on a loaded machine (48 runs; about 15 s when idle).
SLOW = 300


class Script:
    """The model: decides by the request's model, its tools (the harness) and the task's
    marker whether this run solves its task (writes done.txt, which `check` looks for)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.runs: Counter[tuple[str, str, str]] = Counter()

    def __call__(self, body: Mapping[str, Any]) -> Step:
        match = re.search(r"MARK-(t\d)", json.dumps(body))
        assert match is not None, "a request without a task marker"
        task, model = match.group(1), str(body.get("model"))
        harness = "claude-code" if "Bash" in tool_names(body) else "native"
        spent = usage(input_tokens=1000, output_tokens=100)
        if tool_outputs(body):
            return reply("done.", usage=spent)
        if (model, harness, task) == TRANSIENT:
            return fault(status=500, message="scripted outage")
        with self.lock:
            self.runs[(model, harness, task)] += 1
            run = self.runs[(model, harness, task)]
        if run > SOLVED[(model, harness)][TASKS.index(task)]:
            return reply("I could not do it.", usage=spent)
        if harness == "claude-code":
            action = call("Bash", {"command": "touch done.txt", "description": "mark"})
        else:
            action = call("exec_command", {"cmd": "touch done.txt"})
        return reply(tool_calls=[action], usage=spent)


def _script(server: ModelServer) -> None:
    server.clear()
    script = Script()
    server.enqueue(*([script] * 200))


def _matrix_args(*extra: str) -> list[str]:
    return [
        *("--matrix", f"model={','.join(MODELS)}"),
        *("--matrix", f"harness={','.join(HARNESSES)}"),
        *("--repeat", str(REPEAT), "--jobs", "4", "--name", "nightly", "--max-attempts", "1"),
        *PRICING,
        *extra,
    ]


def _expected(model: str, harness: str) -> dict[str, Any]:
    """The combination's numbers, from SOLVED and HAND alone."""
    solved = SOLVED[(model, harness)]
    transient = 3 if (model, harness) == TRANSIENT[:2] else 0
    failed = 12 - sum(solved) - transient
    # A solving run makes two requests (the command, then the answer); a failing one, one.
    turns = 2 * sum(solved) + failed
    cost = round(REQUEST_COST * turns, 6)
    rates = [float(sum(HAND[c][k] for c in solved) / 4) for k in range(3)]
    return {
        "combination": {"model": model, "harness": harness},
        "label": f"model={model} harness={harness}",
        "tasks": 4,
        "runs": 12,
        "solved_runs": sum(solved),
        "solved_tasks": sum(c > 0 for c in solved),
        "pass_at": {"1": rates[0], "2": rates[1], "3": rates[2]},
        "mean_turns": round((turns + transient) / 12, 3),
        "cost_usd": cost,
        "cost_per_success_usd": round(cost / sum(solved), 6),
        "failure_classes": dict.fromkeys(FAILURE_CLASSES, 0)
        | {"task": failed, "transient": transient},
    }


def _without_time(section: dict[str, Any]) -> dict[str, Any]:
    combos = [
        {k: v for k, v in c.items() if k != "mean_duration_s"} for c in section["combinations"]
    ]
    return {**section, "combinations": combos}


@pytest.fixture
def tasks_file(tmp_path: Path) -> Path:
    return write_tasks(
        tmp_path / "tasks.jsonl",
        [
            {
                "id": task,
                "prompt": f"Task MARK-{task}: create done.txt.",
                "check": "test -f done.txt",
            }
            for task in TASKS
        ],
    )


def test_matrix_reports_pass_at_k_per_combination_and_shards_merge_to_it(
    model_server: ModelServer, repo: Path, tmp_path: Path, tasks_file: Path
) -> None:
    _script(model_server)
    out = tmp_path / "out"
    step_summary = tmp_path / "step-summary.md"
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(step_summary)}
    result = run_batch(
        model_server, tasks_file, out, *_matrix_args(), cwd=repo, env=env, timeout=SLOW
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr

    data = summary(out)
    assert len(data["tasks"]) == 48
    first = data["tasks"][0]
    assert first["id"] == "t1.m-alpha.native.r1"
    assert (first["task"], first["combination"], first["repeat"]) == (
        "t1",
        {"model": "m-alpha", "harness": "native"},
        1,
    )
    matrix = data["matrix"]
    assert matrix["axes"] == {"model": list(MODELS), "harness": list(HARNESSES)}
    assert matrix["repeat"] == 3
    expected = [_expected(m, h) for m in MODELS for h in HARNESSES]
    assert _without_time(matrix)["combinations"] == expected
    # Every batch counts its failures by class.
    assert data["totals"]["failure_classes"]["transient"] == 3
    assert data["totals"]["failure_classes"]["task"] == sum(
        e["failure_classes"]["task"] for e in expected
    )

    # junit.xml: a suite per combination, each failure typed by its class.
    suites = ET.parse(out / "junit.xml").getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == [f"nightly [{e['label']}]" for e in expected]
    types = Counter(f.get("type") for f in ET.parse(out / "junit.xml").getroot().iter("failure"))
    assert types == {"task": data["totals"]["failure_classes"]["task"], "transient": 3}

    # The step summary: the batch's block, then the charts and the table, once.
    written = step_summary.read_text()
    assert written.count("xychart-beta") == 2 and "failure classes: 3 transient" in written
    assert "| model=m-beta harness=native | 4 | 3 | 12 | 3 | 25.0% | 50.0% | 75.0% |" in written

    # A rerun into the same directory resumes: every run is skipped, nothing asked again.
    asked = len(model_server.model_requests)
    again = run_batch(model_server, tasks_file, out, *_matrix_args(), cwd=repo, timeout=SLOW)
    assert again.returncode == 1 and len(model_server.model_requests) == asked
    assert summary(out)["matrix"] == matrix

    # The report: charts first, then the table; on stdout without --out.
    report = run_cli(["batch", "report", str(out)], cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert report.stdout.index("```mermaid\nxychart-beta") < report.stdout.index("| combination |")
    assert (
        "| model=m-alpha harness=native | 4 | 3 | 12 | 6 | 50.0% | 66.7% | 75.0% |" in report.stdout
    )

    # The same matrix in two shards, merged, reports the same numbers.
    _script(model_server)
    shards = [tmp_path / "s1", tmp_path / "s2"]
    for number, shard in enumerate(shards, start=1):
        ran = run_batch(
            model_server,
            tasks_file,
            shard,
            *_matrix_args("--shard", f"{number}/2"),
            cwd=repo,
            timeout=SLOW,
        )
        assert ran.returncode == 1, ran.stderr
        assert len(summary(shard)["tasks"]) == 24
    merged = run_cli(
        ["batch", "merge", *map(str, shards), "--out", str(tmp_path / "m")], cwd=tmp_path
    )
    assert merged.returncode == 1, merged.stderr
    assert _without_time(summary(tmp_path / "m")["matrix"]) == _without_time(matrix)
    for source, target in (([tmp_path / "m"], "r1"), (shards, "r2")):
        made = run_cli(
            ["batch", "report", *map(str, source), "--out", str(tmp_path / target)], cwd=tmp_path
        )
        assert made.returncode == 0, made.stderr
    for name in ("summary.json", "report.md"):
        assert (tmp_path / "r1" / name).read_text() == (tmp_path / "r2" / name).read_text()
    assert (tmp_path / "r1" / "summary.json").read_text() == (
        tmp_path / "m" / "summary.json"
    ).read_text()

    # --compare: the change against the single run (same pass rates: no regression).
    compared = run_cli(
        ["batch", "report", str(tmp_path / "m"), "--compare", str(out)], cwd=tmp_path
    )
    assert compared.returncode == 0, compared.stderr
    assert "### Compared with" in compared.stdout
    assert "| model=m-alpha harness=native | 50.0% → 50.0% (+0.0) |" in compared.stdout
    assert "⚠️" not in compared.stdout
