"""Shards: `--shard I/N` (1-based) and Kubernetes' JOB_COMPLETION_INDEX pick deterministic
slices, and `batch merge` of the shards writes what one run over all tasks writes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.batch.conftest import run_batch, statuses, write_tasks
from tests.conftest import run_cli
from tests.support.model_server import ModelServer, reply

_IDS = ["t0", "t1", "t2", "t3", "t4"]


def _script(server: ModelServer, runs: int) -> None:
    for task_id in _IDS:
        server.route(f"[task:{task_id}]", *[reply(f"{task_id} done")] * runs)


def _volatile_free(summary: dict[str, Any]) -> dict[str, Any]:
    """What differs between two runs of the same tasks: durations and session ids."""
    summary["totals"].pop("duration_s")
    for task in summary["tasks"]:
        task.pop("duration_s")
        task.pop("session_id")
    return summary


def _junit_without_volatile(text: str) -> str:
    text = re.sub(r' time="[^"]*"', "", text)
    return re.sub(r"session: [0-9a-f-]+", "session: -", text)


def test_two_shards_merged_equal_one_run(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    tasks = write_tasks(
        tmp_path / "suite.jsonl",
        [{"id": i, "prompt": f"do [task:{i}]", "repo": str(repo)} for i in _IDS],
    )
    _script(model_server, runs=2)

    first = run_batch(model_server, tasks, tmp_path / "s0", "--shard", "1/2", cwd=tmp_path)
    # The second shard as a Kubernetes Indexed Job pod sees it.
    second = run_batch(
        model_server,
        tasks,
        tmp_path / "s1",
        cwd=tmp_path,
        env={"JOB_COMPLETION_INDEX": "1", "JOB_COMPLETIONS": "2"},
    )
    assert (first.returncode, second.returncode) == (0, 0), first.stderr + second.stderr
    assert list(statuses(tmp_path / "s0")) == ["t0", "t2", "t4"]
    assert list(statuses(tmp_path / "s1")) == ["t1", "t3"]
    assert json.loads((tmp_path / "s1" / "shard.json").read_text())["shard"] == "2/2"
    assert "batch: shard 2/2 (from JOB_COMPLETION_INDEX/JOB_COMPLETIONS)" in second.stderr

    merged = run_cli(
        [
            "batch",
            "merge",
            str(tmp_path / "s0"),
            str(tmp_path / "s1"),
            "--out",
            str(tmp_path / "m"),
        ],
        cwd=tmp_path,
    )
    single = run_batch(model_server, tasks, tmp_path / "all", "--jobs", "3", cwd=tmp_path)
    assert (merged.returncode, single.returncode) == (0, 0), merged.stderr + single.stderr

    merged_summary = json.loads((tmp_path / "m" / "summary.json").read_text())
    single_summary = json.loads((tmp_path / "all" / "summary.json").read_text())
    assert [t["id"] for t in merged_summary["tasks"]] == _IDS
    assert _volatile_free(merged_summary) == _volatile_free(single_summary)
    assert _junit_without_volatile((tmp_path / "m" / "junit.xml").read_text()) == (
        _junit_without_volatile((tmp_path / "all" / "junit.xml").read_text())
    )
    # Merging one whole run reproduces its reports byte for byte.
    again = run_cli(
        ["batch", "merge", str(tmp_path / "all"), "--out", str(tmp_path / "again")], cwd=tmp_path
    )
    assert again.returncode == 0, again.stderr
    for name in ("summary.json", "junit.xml"):
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "all" / name).read_bytes()
    # The merged directory stands alone: every task's files are there.
    assert (tmp_path / "m" / "t3" / "last-message.txt").read_text().strip() == "t3 done"


def test_merge_rejects_overlapping_shards_and_bad_shard_specs(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    tasks = write_tasks(tmp_path / "suite.jsonl", [{"id": "t0", "prompt": "do [task:t0]"}])
    _script(model_server, runs=1)
    assert run_batch(model_server, tasks, tmp_path / "a", cwd=repo).returncode == 0

    twice = run_cli(
        ["batch", "merge", str(tmp_path / "a"), str(tmp_path / "a"), "--out", str(tmp_path / "m")],
        cwd=tmp_path,
    )
    assert twice.returncode == 2
    assert "task 't0' is in both" in twice.stderr

    for spec, message in (
        ("3/2", "out of range"),
        ("0/2", "shards are numbered from 1, as in Jest and Playwright: --shard 1/2 ... 2/2"),
        ("x", "must look like I/N"),
    ):
        bad = run_batch(model_server, tasks, tmp_path / "b", "--shard", spec, cwd=repo)
        assert bad.returncode == 2 and message in bad.stderr, bad.stderr
    orphan = run_batch(
        model_server, tasks, tmp_path / "b", cwd=repo, env={"JOB_COMPLETION_INDEX": "0"}
    )
    assert orphan.returncode == 2 and "JOB_COMPLETIONS" in orphan.stderr
    assert not (tmp_path / "b").exists()


def test_merge_without_a_shard_reports_its_tasks_missing(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    """A shard whose machine died never uploads its directory: the merged reports must not
    pass on what the other shards did alone."""
    tasks = write_tasks(
        tmp_path / "suite.jsonl",
        [{"id": i, "prompt": f"do [task:{i}]", "repo": str(repo)} for i in _IDS],
    )
    _script(model_server, runs=1)
    shard = run_batch(model_server, tasks, tmp_path / "s0", "--shard", "1/2", cwd=tmp_path)
    assert shard.returncode == 0, shard.stderr

    merged = run_cli(
        ["batch", "merge", str(tmp_path / "s0"), "--out", str(tmp_path / "m")], cwd=tmp_path
    )
    assert merged.returncode == 1, merged.stderr
    assert "t1, t3" in merged.stderr and "shard" in merged.stderr
    summary = json.loads((tmp_path / "m" / "summary.json").read_text())
    assert [(t["id"], t["status"]) for t in summary["tasks"]] == [
        ("t0", "success"),
        ("t1", "missing"),
        ("t2", "success"),
        ("t3", "missing"),
        ("t4", "success"),
    ]
    assert summary["exit_code"] == 1 and summary["totals"]["missing"] == 2
    junit = (tmp_path / "m" / "junit.xml").read_text()
    assert junit.count("<failure") == 2 and 'name="t3"' in junit
