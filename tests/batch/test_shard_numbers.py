"""Shards numbered as CI numbers them: `--shard I/N` from 1 (Jest, Playwright, Vitest),
GitLab's CI_NODE_INDEX/CI_NODE_TOTAL (1-based) and a Kubernetes Indexed Job's
JOB_COMPLETION_INDEX (0-based) of JOB_COMPLETIONS; the flag wins; `batch --json` reports each
task on stdout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oiexec.core.errors import UsageError
from oiexec.runner.batch.merge import merge_batches
from oiexec.runner.batch.plan import Shard, parse_shard, select, shard_from_env
from oiexec.runner.batch.tasks import Task
from tests.batch.conftest import run_batch, statuses, write_tasks
from tests.support.model_server import ModelServer, reply

_IDS = ["t1", "t2", "t3", "t4", "t5"]


def _tasks(count: int) -> list[Task]:
    return [Task(index=i, id=f"t{i + 1}", prompt="p") for i in range(count)]


def test_shard_i_of_n_takes_the_ith_task_and_every_nth_after_it() -> None:
    tasks = _tasks(7)
    picked = {i: [t.id for t in select(tasks, Shard(i, 3))] for i in (1, 2, 3)}
    assert picked == {1: ["t1", "t4", "t7"], 2: ["t2", "t5"], 3: ["t3", "t6"]}
    assert [t.id for t in select(tasks, parse_shard("1/1"))] == [t.id for t in tasks]
    assert str(parse_shard("4/4")) == "4/4"


@pytest.mark.parametrize("text", ["0/4", "5/4"])
def test_shard_zero_or_past_n_names_the_convention(text: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_shard(text)
    assert (
        "shards are numbered from 1, as in Jest and Playwright: --shard 1/4 ... 4/4"
        in caught.value.message
    )


@pytest.mark.parametrize(
    ("env", "shard", "source"),
    [
        ({"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "4"}, "1/4", "CI_NODE_INDEX/CI_NODE_TOTAL"),
        ({"CI_NODE_INDEX": "4", "CI_NODE_TOTAL": "4"}, "4/4", "CI_NODE_INDEX/CI_NODE_TOTAL"),
        (
            {"JOB_COMPLETION_INDEX": "0", "JOB_COMPLETIONS": "3"},
            "1/3",
            "JOB_COMPLETION_INDEX/JOB_COMPLETIONS",
        ),
        (
            {"JOB_COMPLETION_INDEX": "2", "JOB_COMPLETIONS": "3"},
            "3/3",
            "JOB_COMPLETION_INDEX/JOB_COMPLETIONS",
        ),
        # GitLab sets CI_NODE_TOTAL=1 in every job; without `parallel:` there is no index.
        ({"CI_NODE_TOTAL": "1", "JOB_COMPLETIONS": "3"}, None, None),
        ({"CI_NODE_INDEX": " ", "JOB_COMPLETION_INDEX": ""}, None, None),
    ],
)
def test_the_shard_from_the_ci_variables(
    env: dict[str, str], shard: str | None, source: str | None
) -> None:
    choice = shard_from_env(env)
    assert (None if choice.shard is None else str(choice.shard), choice.source) == (shard, source)


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"CI_NODE_INDEX": "0", "CI_NODE_TOTAL": "4"}, "CI_NODE_INDEX counts from 1"),
        ({"CI_NODE_INDEX": "5", "CI_NODE_TOTAL": "4"}, "CI_NODE_INDEX='5' is out of range"),
        ({"CI_NODE_INDEX": "two", "CI_NODE_TOTAL": "4"}, "CI_NODE_INDEX must be a whole number"),
        ({"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "0"}, "CI_NODE_TOTAL='0' must be at least 1"),
        ({"CI_NODE_INDEX": "1"}, "CI_NODE_INDEX is set but CI_NODE_TOTAL is not"),
        (
            {"JOB_COMPLETION_INDEX": "3", "JOB_COMPLETIONS": "3"},
            "JOB_COMPLETION_INDEX counts from 0, so it must be between 0 and 2",
        ),
        ({"JOB_COMPLETION_INDEX": "0"}, "JOB_COMPLETION_INDEX is set but JOB_COMPLETIONS"),
        (
            {"JOB_COMPLETION_INDEX": "0", "JOB_COMPLETIONS": "9" * 40},
            "JOB_COMPLETIONS must be a whole number",
        ),
        (
            {"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "2", "JOB_COMPLETION_INDEX": "0"},
            "both CI_NODE_INDEX (GitLab) and JOB_COMPLETION_INDEX (Kubernetes) are set",
        ),
    ],
)
def test_a_bad_ci_variable_is_a_usage_error_naming_it(env: dict[str, str], named: str) -> None:
    with pytest.raises(UsageError) as caught:
        shard_from_env(env)
    assert named in caught.value.render()
    assert len(caught.value.render()) < 400


def test_merge_reads_shard_json_written_with_0_based_shards(tmp_path: Path) -> None:
    """Output directories of the earlier, 0-based code: merge reads only `batch_tasks`."""
    for name, task_id, index, shard in (("s0", "a", 0, "0/2"), ("s1", "b", 1, "1/2")):
        directory = tmp_path / name
        directory.mkdir()
        entry = {"index": index, "id": task_id, "status": "success", "exit_code": 0}
        summary = {"batch": "b", "exit_code": 0, "totals": {}, "tasks": [entry]}
        (directory / "summary.json").write_text(json.dumps(summary))
        listed = {"batch": "b", "shard": shard, "tasks": [task_id], "batch_tasks": ["a", "b"]}
        (directory / "shard.json").write_text(json.dumps(listed))
    assert merge_batches([tmp_path / "s0", tmp_path / "s1"], tmp_path / "merged") == 0
    merged = json.loads((tmp_path / "merged" / "summary.json").read_text())
    assert [(t["id"], t["status"]) for t in merged["tasks"]] == [("a", "success"), ("b", "success")]


def test_gitlab_node_index_and_the_flag_winning_with_json_progress(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    tasks = write_tasks(
        tmp_path / "suite.jsonl",
        [{"id": i, "prompt": f"do [task:{i}]", "repo": str(repo)} for i in _IDS],
    )
    for task_id in _IDS:
        model_server.route(f"[task:{task_id}]", reply(f"{task_id} done"))
    gitlab = {"CI_NODE_INDEX": "2", "CI_NODE_TOTAL": "2"}

    by_env = run_batch(model_server, tasks, tmp_path / "s2", "--json", cwd=tmp_path, env=gitlab)
    assert by_env.returncode == 0, by_env.stderr
    assert "batch: shard 2/2 (from CI_NODE_INDEX/CI_NODE_TOTAL): 2 of 5 task(s)" in by_env.stderr
    assert list(statuses(tmp_path / "s2")) == ["t2", "t4"]
    assert json.loads((tmp_path / "s2" / "shard.json").read_text())["shard"] == "2/2"
    # stdout is JSONL alone: the batch, each task started and completed, the batch completed.
    events = by_env.events
    assert events[0] == {
        "type": "batch.started",
        "batch": "suite",
        "out": str(tmp_path / "s2"),
        "shard": "2/2",
        "tasks": 2,
    }
    # Priced at the catalog's rate for the model (tests/batch/test_batch_cost.py: exact).
    assert events[-1].pop("cost_usd") > 0
    assert events[-1] == {
        "type": "batch.completed",
        "batch": "suite",
        "out": str(tmp_path / "s2"),
        "counts": {"success": 2},
        "exit_code": 0,
    }
    started = [e for e in events if e["type"] == "task.started"]
    completed = [e for e in events if e["type"] == "task.completed"]
    assert sorted(e["id"] for e in started) == sorted(e["id"] for e in completed) == ["t2", "t4"]
    assert {e["action"] for e in started} == {"run"} and {e["shard"] for e in started} == {"2/2"}
    for event in completed:
        assert event["status"] == "success" and event["exit_code"] == 0
        assert event["turns"] == 1 and event["duration_s"] > 0 and not event["skipped"]
        assert event["session_id"] and event["message"] is None
        # A task completes after it started.
        began = next(e for e in started if e["id"] == event["id"])
        assert events.index(event) > events.index(began)
    assert len(events) == 6
    assert "[2/2]" in by_env.stderr  # the human progress stays on stderr

    # The flag wins over the environment; a rerun reports the finished tasks as skipped.
    again = run_batch(
        model_server, tasks, tmp_path / "s2", "--json", "--shard", "2/2", cwd=tmp_path, env=gitlab
    )
    assert again.returncode == 0, again.stderr
    assert "batch: shard 2/2 (from --shard)" in again.stderr
    assert [e["type"] for e in again.events] == [
        "batch.started",
        "task.completed",
        "task.completed",
        "batch.completed",
    ]
    assert all(e["skipped"] for e in again.events if e["type"] == "task.completed")

    by_flag = run_batch(
        model_server, tasks, tmp_path / "s1", "--shard", "1/2", cwd=tmp_path, env=gitlab
    )
    assert by_flag.returncode == 0, by_flag.stderr
    assert list(statuses(tmp_path / "s1")) == ["t1", "t3", "t5"]
    assert by_flag.stdout == ""  # no --json: nothing on stdout

    # A bad variable: a usage error naming it, on stderr and (with --json) on stdout.
    bad = run_batch(
        model_server,
        tasks,
        tmp_path / "bad",
        "--json",
        cwd=tmp_path,
        env={"CI_NODE_INDEX": "0", "CI_NODE_TOTAL": "2"},
    )
    assert bad.returncode == 2 and "CI_NODE_INDEX='0' is out of range" in bad.stderr
    (line,) = bad.events
    assert line["type"] == "batch.failed" and line["exit_code"] == 2
    assert "CI_NODE_INDEX" in line["error"]["message"]
    assert not (tmp_path / "bad").exists() and "Traceback" not in bad.stderr
