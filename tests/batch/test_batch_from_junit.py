"""A batch task seeded from a JUnit report (`from_junit`): the key in the tasks file, and a
batch run that fixes what a real pytest report says failed, in the task's worktree."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from oiexec.core.errors import UsageError
from oiexec.runner.batch.tasks import parse_tasks
from tests.batch.conftest import run_batch, statuses, write_tasks
from tests.conftest import FIX_PATCH, FIXED_CALC, git
from tests.support.junit_reports import PYTEST_ENV, PYTEST_FILE, add_pytest_tests, pytest_report
from tests.support.model_server import ModelServer, apply_patch_call, reply, user_texts


def _load(text: str, where: Path = Path("/jobs/tasks.jsonl")) -> list[object]:
    return list(parse_tasks(where, text.encode()))


def test_from_junit_is_a_path_or_a_list_resolved_beside_the_tasks_file() -> None:
    one, many, absolute = _load(
        '{"id": "a", "from_junit": "reports/py.xml"}\n'
        '{"id": "b", "prompt": "Keep it small.", "from_junit": ["py.xml", "../js.xml"]}\n'
        '{"id": "c", "prompt": "x", "from_junit": "/ci/report.xml"}\n'
    )
    assert one.prompt == "" and one.from_junit == ("/jobs/reports/py.xml",)  # type: ignore[attr-defined]
    assert many.from_junit == ("/jobs/py.xml", "/jobs/../js.xml")  # type: ignore[attr-defined]
    assert absolute.from_junit == ("/ci/report.xml",)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"id": "a", "from_junit": []}', "`from_junit` is an empty list"),
        (
            '{"id": "a", "from_junit": ["r.xml", 3]}',
            "`from_junit` must list paths (strings), not an integer",
        ),
        ('{"id": "a", "from_junit": " "}', "`from_junit` names an empty path"),
        ('{"id": "a", "from_junit": 1}', "`from_junit` must be a path or a list of paths"),
        ('{"id": "a"}', "missing `prompt`"),
    ],
)
def test_bad_from_junit_values_are_named(line: str, problem: str) -> None:
    with pytest.raises(UsageError) as caught:
        _load(line + "\n")
    assert f"tasks.jsonl:1: {problem}" in caught.value.message


def test_a_batch_task_fixes_what_its_junit_report_says_failed(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    add_pytest_tests(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "pytest tests")
    jobs = tmp_path / "jobs"
    (jobs / "reports").mkdir(parents=True)
    pytest_report(repo, jobs / "reports" / "tests.xml")
    tasks = write_tasks(jobs / "tasks.jsonl", [{"id": "fix", "from_junit": "reports/tests.xml"}])
    model_server.enqueue(reply(tool_calls=[apply_patch_call(FIX_PATCH)]), reply("Fixed add()."))
    out = tmp_path / "out"
    # Started elsewhere: the report's path is the tasks file's, not the working directory's.
    result = run_batch(model_server, tasks, out, cwd=repo, env=PYTEST_ENV)

    assert result.returncode == 0, result.stderr
    assert statuses(out) == {"fix": "success"}
    prompt = user_texts(model_server.bodies[0])[-1]
    assert prompt.startswith("Fix the failing tests below.")
    assert f"### {PYTEST_FILE}::TestPairs::test_sum[1-2]" in prompt
    # The derived check ran in the task's worktree, where the fix is.
    events = [json.loads(line) for line in (out / "fix" / "events.jsonl").read_text().splitlines()]
    checks = [
        e["item"]
        for e in events
        if e["type"] == "item.completed"
        and e["item"]["type"] == "command_execution"
        and "python3 -m pytest" in e["item"]["command"]
    ]
    assert [c["exit_code"] for c in checks] == [0]
    assert "3 passed" in checks[0]["aggregated_output"]
    assert "+    return a + b" in (out / "fix" / "diff.patch").read_text()
    assert (repo / "calc.py").read_text() != FIXED_CALC  # the source checkout is untouched
    assert os.path.isfile(jobs / "reports" / "tests.xml")


def test_a_new_report_under_the_same_name_is_a_new_task(tmp_path: Path) -> None:
    """A nightly rerun into the same --out must fix what fails tonight, not skip the task as
    done because last night's report had the same path."""
    from oiexec.runner.batch.plan import input_hash

    report = tmp_path / "report.xml"
    report.write_text('<testsuite name="pytest" tests="1"/>')
    [task] = _load('{"id": "a", "from_junit": "report.xml"}', tmp_path / "tasks.jsonl")
    before = input_hash(task, [], "base")  # type: ignore[arg-type]
    assert input_hash(task, [], "base") == before  # type: ignore[arg-type]
    report.write_text('<testsuite name="pytest" tests="2"/>')
    assert input_hash(task, [], "base") != before  # type: ignore[arg-type]
    report.unlink()  # unreadable: still hashed (the run itself says what is wrong)
    assert input_hash(task, [], "base") not in (before, "")  # type: ignore[arg-type]
