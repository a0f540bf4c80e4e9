"""`interpreter batch` end to end: several scripted tasks across two repositories, two at a
time; reports, per-task files, diffs that apply, sources untouched, then --retry-failed."""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.batch.conftest import (
    requests_for,
    run_batch,
    source_state,
    statuses,
    summary,
    write_tasks,
)
from tests.conftest import FIX_PATCH, FIXED_CALC, git
from tests.support.model_server import (
    ModelServer,
    apply_patch_call,
    call,
    fault,
    reply,
    user_texts,
)


def _apply_to_clean_checkout(source: Path, patch: Path, dest: Path) -> Path:
    git(source.parent, "clone", "-q", str(source), str(dest))
    subprocess.run(["git", "apply", str(patch)], cwd=dest, check=True, capture_output=True)
    return dest


def test_batch_reports_each_task_and_retry_failed_resumes_sessions(
    model_server: ModelServer, repo: Path, repo2: Path, tmp_path: Path
) -> None:
    tasks = write_tasks(
        tmp_path / "nightly.jsonl",
        [
            {"id": "fix", "prompt": "fix calc [task:fix]", "repo": str(repo)},
            {"id": "broken", "prompt": "fail [task:broken]", "repo": str(repo2)},
            {"id": "limited", "prompt": "loop [task:limited]", "repo": str(repo), "max_turns": 1},
            {
                "id": "checked",
                "prompt": "make the tests pass [task:checked]",
                "repo": str(repo),
                "check": "python -m unittest -q",
            },
            {"id": "notes", "prompt": "edit notes [task:notes]", "repo": str(repo2)},
        ],
    )
    server = model_server
    server.route("[task:fix]", reply(tool_calls=[apply_patch_call(FIX_PATCH)]), reply("fixed"))
    server.route("[task:broken]", fault(400, message="model refused the request"))
    server.route(
        "[task:limited]",
        reply(tool_calls=[call("exec_command", {"cmd": "echo partial > limited.txt"})]),
    )
    server.route(
        "[task:checked]",
        reply("done, I think"),  # the check fails: the model gets its output and continues
        reply(tool_calls=[apply_patch_call(FIX_PATCH)]),
        reply("now really done"),
    )
    server.route(
        "[task:notes]",
        reply(
            tool_calls=[
                call("exec_command", {"cmd": "printf 'two\\n' >> notes.txt && echo hi > new.txt"})
            ]
        ),
        reply("notes edited"),
    )
    before = (source_state(repo), source_state(repo2))
    out = tmp_path / "out"

    result = run_batch(server, tasks, out, "--jobs", "2", cwd=tmp_path)

    assert result.returncode == 1, result.stderr
    assert statuses(out) == {
        "fix": "success",
        "broken": "failed",
        "limited": "limit",
        "checked": "success",
        "notes": "success",
    }
    data = summary(out)
    assert data["batch"] == "nightly"
    assert data["exit_code"] == 1
    assert data["totals"]["tasks"] == 5
    assert (data["totals"]["success"], data["totals"]["failed"], data["totals"]["limit"]) == (
        3,
        1,
        1,
    )
    by_id = {task["id"]: task for task in data["tasks"]}
    assert [task["id"] for task in data["tasks"]] == [
        "fix",
        "broken",
        "limited",
        "checked",
        "notes",
    ]
    assert by_id["limited"]["exit_code"] == 4
    assert "refused" in by_id["broken"]["message"]
    assert by_id["fix"]["tokens"]["input"] > 0
    # Turns are model requests; a task stopped by a limit still reports what it spent.
    assert {key: by_id[key]["turns"] for key in ("fix", "limited", "checked", "notes")} == {
        "fix": 2,
        "limited": 1,
        "checked": 3,
        "notes": 2,
    }
    assert by_id["limited"]["tokens"]["input"] > 0
    assert by_id["fix"]["session_id"]
    for task in data["tasks"]:
        for path in (task["paths"]["events"], task["paths"]["diff"], task["paths"]["junit"]):
            assert (out / path).is_file(), path
    assert (out / "fix" / "last-message.txt").read_text().strip() == "fixed"
    assert (out / "checked" / "last-message.txt").read_text().strip() == "now really done"
    events = [
        json.loads(line)
        for line in (out / "checked" / "events.jsonl").read_text().split("\n")
        if line
    ]
    checks = [
        event["item"]["exit_code"]
        for event in events
        if event["type"] == "item.completed"
        and event["item"]["type"] == "command_execution"
        and "unittest" in event["item"]["command"]
    ]
    assert checks[0] != 0 and checks[-1] == 0  # the check failed, then passed
    # Succeeded tasks lose their worktree; failed ones keep it for --retry-failed.
    assert not (out / "fix" / "worktree").exists()
    assert by_id["broken"]["worktree"] == "broken/worktree"
    assert (out / "limited" / "worktree" / "limited.txt").is_file()
    assert "Kept worktrees" in result.stderr and "limited/worktree" in result.stderr

    suite = ET.parse(out / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert list(cases) == ["fix", "broken", "limited", "checked", "notes"]
    assert {case.get("classname") for case in cases.values()} == {"nightly"}
    assert cases["fix"].find("failure") is None
    failure = cases["limited"].find("failure")
    # The type is the failure class: a turn limit is the budget's.
    assert failure is not None and failure.get("type") == "budget"
    assert "limit (exit code 4)" in (failure.get("message") or "")

    # Each diff applies to a clean checkout of its source.
    fixed = _apply_to_clean_checkout(repo, out / "fix" / "diff.patch", tmp_path / "c1")
    assert (fixed / "calc.py").read_text() == FIXED_CALC
    notes = _apply_to_clean_checkout(repo2, out / "notes" / "diff.patch", tmp_path / "c2")
    assert (notes / "notes.txt").read_text() == "one\ntwo\n"
    assert (notes / "new.txt").read_text() == "hi\n"
    assert (source_state(repo), source_state(repo2)) == before

    # --retry-failed: only the unsuccessful tasks run again, resuming their sessions.
    counts = {m: requests_for(server, m) for m in ("[task:fix]", "[task:checked]", "[task:notes]")}
    server.route("[task:broken]", reply("recovered"))
    server.route("[task:limited]", reply("finished the loop"))
    retry = run_batch(server, tasks, out, "--jobs", "2", "--retry-failed", cwd=tmp_path)

    assert retry.returncode == 0, retry.stderr
    assert set(statuses(out).values()) == {"success"}
    assert {m: requests_for(server, m) for m in counts} == counts
    resumed = [b for b in server.bodies if "[task:broken]" in json.dumps(b)][-1]
    texts = user_texts(resumed)
    assert any("fail [task:broken]" in text for text in texts)  # the earlier history
    assert "did not succeed" in texts[-1]
    by_id = {task["id"]: task for task in summary(out)["tasks"]}
    assert by_id["limited"]["attempts"] == 2
    assert (
        by_id["limited"]["session_id"]
        == json.loads((out / "limited" / "events.jsonl").read_text().splitlines()[0])["thread_id"]
    )
    # The resumed task's diff covers both runs, from the task's start.
    redone = _apply_to_clean_checkout(repo, out / "limited" / "diff.patch", tmp_path / "c3")
    assert (redone / "limited.txt").read_text() == "partial\n"
    assert not (out / "limited" / "worktree").exists()
    assert (source_state(repo), source_state(repo2)) == before
