"""A task id is a directory name beside the batch's own files, so it can never be one of them,
nor leave the output directory; --out must name a directory the batch can hold, checked before
any task runs. Both are usage errors (exit 2) naming what is wrong, never an internal error."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from oiexec.core.errors import UsageError
from oiexec.runner.batch.layout import RESERVED_NAMES
from oiexec.runner.batch.tasks import check_id, parse_tasks
from tests.batch.conftest import batch_args, run_batch, source_state, statuses, write_tasks
from tests.conftest import run_cli
from tests.support.model_server import ModelServer, call, reply

_BAD_IDS = [
    *sorted(RESERVED_NAMES),
    "Summary.JSON",  # one file with summary.json on macOS and Windows
    "JUNIT.xml",
    ".",
    "..",
    "../escape",
    "fix/issue-12",
    "a\\b",
    ".hidden",
    "a\n",  # `$` in a regex lets a final newline through; fullmatch does not
    "a\x00b",
    "a\tb",
    "a\x1b[31m",
    "é",
    "a" * 129,
    "-rf",
]


@pytest.mark.parametrize("task_id", _BAD_IDS, ids=repr)
def test_ids_that_are_not_a_safe_directory_name_are_refused_naming_the_line(
    tmp_path: Path, task_id: str
) -> None:
    assert check_id(task_id) is not None
    raw = (
        json.dumps({"id": "ok", "prompt": "p"}) + "\n" + json.dumps({"id": task_id, "prompt": "p"})
    )
    with pytest.raises(UsageError) as caught:
        parse_tasks(tmp_path / "tasks.jsonl", raw.encode())
    text = caught.value.render()
    # Named by its line; NUL is refused in every string key, the id's included.
    assert "tasks.jsonl:2: id " in text or "tasks.jsonl:2: `id` contains a NUL" in text
    assert "tasks.jsonl:1" not in text


def test_documented_ids_still_load() -> None:
    good = ["a", "fix-issue-12", "task_1.v2", "A" * 128, "summary.json.2", "junit", "9"]
    raw = "".join(json.dumps({"id": i, "prompt": "p"}) + "\n" for i in good)
    assert [t.id for t in parse_tasks(Path("t.jsonl"), raw.encode())] == good


def test_ids_differing_only_in_case_are_refused_as_one_directory() -> None:
    raw = b'{"id": "Fix-1", "prompt": "p"}\n{"id": "fix-1", "prompt": "q"}\n'
    with pytest.raises(UsageError) as caught:
        parse_tasks(Path("t.jsonl"), raw)
    assert "t.jsonl:2: id 'fix-1' differs from 'Fix-1' (at t.jsonl:1) only in case" in str(
        caught.value
    )


def test_reserved_ids_are_refused_before_anything_runs(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    """Today's failure: tasks named summary.json and junit.xml became directories and the
    summary write died with an internal IsADirectoryError, leaving no report."""
    tasks = write_tasks(
        tmp_path / "t.jsonl",
        [{"id": "summary.json", "prompt": "a [task:s]"}, {"id": "JUNIT.XML", "prompt": "b"}],
    )
    out = tmp_path / "out"
    result = run_batch(model_server, tasks, out, cwd=repo, timeout=60)
    assert result.returncode == 2, result.stderr
    assert "t.jsonl:1: id 'summary.json' cannot be used as a directory name" in result.stderr
    assert "t.jsonl:2: id 'JUNIT.XML' cannot be used" in result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert not out.exists() and model_server.model_requests == []


def test_out_that_cannot_hold_the_batch_is_a_usage_error_up_front(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    tasks = write_tasks(tmp_path / "t.jsonl", [{"id": "one", "prompt": "go [task:one]"}])
    a_file = tmp_path / "file"
    a_file.write_text("x")
    planted = tmp_path / "planted"
    (planted / "shard.json").mkdir(parents=True)  # a directory where the batch writes a file
    before = source_state(repo)
    cases = {
        "": "Invalid value for '--out': is empty",
        "/proc/oiexec-batch": "--out /proc/oiexec-batch: cannot create or open its directory",
        str(a_file / "sub"): f"--out {a_file / 'sub'}: cannot create or open its directory",
        str(a_file): "Invalid value for '--out'",
        str(planted): f"--out {planted}: shard.json there is not a file",
        # The source checkout: a task `src` would have its files and worktree cleared there.
        ".": f"--out {repo} holds ",
    }
    for out, message in cases.items():
        started = time.monotonic()
        args = batch_args(model_server, tasks, Path("placeholder"))
        args[args.index("--out") + 1] = out  # as given: Path("") would be "."
        result = run_cli(args, cwd=repo, timeout=60)
        elapsed = time.monotonic() - started
        assert result.returncode == 2, (out, result.stderr)
        assert message in result.stderr, (out, result.stderr)
        assert "Traceback" not in result.stderr and "internal error" not in result.stderr
        assert elapsed < 20, (out, elapsed)  # ~1.5 s; generous for a loaded machine
    # `--out ''` once wrote the batch into the directory it ran in: here, the source checkout.
    assert "but is not a batch output directory (no shard.json or summary.json)" in result.stderr
    assert source_state(repo) == before and not (repo / "one").exists()
    assert model_server.model_requests == []
    merged = run_cli(["batch", "merge", str(planted), "--out", ""], cwd=repo, timeout=60)
    assert merged.returncode == 2 and "Invalid value for '--out': is empty" in merged.stderr


def test_a_report_name_a_task_took_over_fails_the_batch_with_the_table_not_a_traceback(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    """A task whose sandbox reaches DIR can make a directory of summary.json while it runs:
    the batch says it could not write its reports and fails; what the tasks came to is still
    in the table and each task's result.json."""
    tasks = write_tasks(tmp_path / "t.jsonl", [{"id": "one", "prompt": "go [task:one]"}])
    model_server.route(
        "[task:one]",
        reply(tool_calls=[call("exec_command", {"cmd": "mkdir ../../summary.json"})]),
        reply("done"),
    )
    out = tmp_path / "out"
    result = run_batch(model_server, tasks, out, cwd=repo, timeout=120)
    assert result.returncode == 1, result.stderr
    assert f"batch: could not write the reports in {out}" in result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert "success" in result.stderr  # the table
    assert (out / "summary.json").is_dir()
    assert json.loads((out / "one" / "result.json").read_text())["status"] == "success"
    os.rmdir(out / "summary.json")
    # A rerun with that directory there is refused up front, before any task runs.
    (out / "summary.json").mkdir()
    again = run_batch(model_server, tasks, out, cwd=repo, timeout=60)
    assert again.returncode == 2 and "summary.json there is not a file" in again.stderr
    os.rmdir(out / "summary.json")
    assert run_batch(model_server, tasks, out, cwd=repo, timeout=60).returncode == 0
    assert statuses(out) == {"one": "success"}


def test_reports_are_written_whatever_text_the_records_hold() -> None:
    """A lone surrogate in a record (a `\\ud800` escape in a task's events, which the task can
    write, or in a shard's summary given to merge) or in the batch name once made the report
    write fail after every task ran (UnicodeEncodeError; XML refused it): it is U+FFFD now."""
    from oiexec.runner.batch.record import TaskRecord
    from oiexec.runner.batch.report import render

    record = TaskRecord(index=0, id="a", status="failed", message="\ud800", session_id="\udcff")
    summary, junit = render("nightly-\udcff", [record])
    summary.encode("utf-8")
    junit.encode("utf-8")
    assert json.loads(summary)["tasks"][0]["message"] == "\ufffd"
    assert json.loads(summary)["batch"] == "nightly-\ufffd"
    assert 'classname="nightly-\ufffd"' in junit


def test_a_worktree_swapped_for_a_link_is_never_a_tasks_workspace(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    """A failed task's kept worktree replaced by a link (by another task that reaches DIR)
    would make --retry-failed resume the task wherever the link points: the link is removed
    and the task runs again from a fresh worktree."""
    from tests.support.model_server import fault

    tasks = write_tasks(tmp_path / "t.jsonl", [{"id": "one", "prompt": "go [task:one]"}])
    model_server.route("[task:one]", fault(400, message="refused"))
    out = tmp_path / "out"
    assert run_batch(model_server, tasks, out, cwd=repo, timeout=120).returncode == 1
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    worktree = out / "one" / "worktree"
    subprocess.run(["rm", "-rf", str(worktree)], check=True)
    worktree.symlink_to(elsewhere)
    model_server.route(
        "[task:one]",
        reply(tool_calls=[call("exec_command", {"cmd": "touch ran-here"})]),
        reply("done"),
    )
    retry = run_batch(model_server, tasks, out, "--retry-failed", cwd=repo, timeout=120)
    assert retry.returncode == 0, retry.stderr
    assert list(elsewhere.iterdir()) == []
    assert not worktree.is_symlink()
    assert "ran-here" in (out / "one" / "diff.patch").read_text()


@pytest.mark.parametrize(
    "text",
    ["1/" + "9" * 5000, "1/0", "5/4", "-1/4", "a/b", "0/4/1", "\u0660/\u0664", ""],
    ids=["5000 digits", "no shards", "index past", "negative", "words", "three", "arabic", "empty"],
)
def test_a_shard_that_is_not_i_of_n_is_a_usage_error(text: str) -> None:
    from oiexec.runner.batch.plan import parse_shard, shard_from_env

    with pytest.raises(UsageError) as caught:
        parse_shard(text)
    assert len(caught.value.message) < 300  # 5000 digits were an internal ValueError
    with pytest.raises(UsageError):
        index, _, count = text.partition("/")
        shard_from_env({"JOB_COMPLETION_INDEX": index or "x", "JOB_COMPLETIONS": count or "x"})
    assert parse_shard(" 1 / 4 ").count == 4


def test_a_rerun_of_a_reordered_file_reports_in_the_new_order(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    """Finished tasks are skipped on a rerun; their records took their old positions, so a
    reordered file was reported in the old order (and a merge of such shards mixed up)."""
    first = [{"id": "a", "prompt": "go [task:a]"}, {"id": "b", "prompt": "go [task:b]"}]
    model_server.route("[task:a]", reply("a done"))
    model_server.route("[task:b]", reply("b done"))
    out = tmp_path / "out"
    tasks = write_tasks(tmp_path / "t.jsonl", first)
    assert run_batch(model_server, tasks, out, cwd=repo, timeout=120).returncode == 0
    write_tasks(tasks, list(reversed(first)))
    again = run_batch(model_server, tasks, out, cwd=repo, timeout=120)
    assert again.returncode == 0, again.stderr
    entries = json.loads((out / "summary.json").read_text())["tasks"]
    assert [(e["index"], e["id"]) for e in entries] == [(0, "b"), (1, "a")]
    assert len(model_server.model_requests) == 2  # both skipped the second time
