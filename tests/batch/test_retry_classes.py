"""Failure classes in a batch: each task's record says its class and each attempt's, and
`batch --retry CLASSES` reruns only the tasks that failed with one of them, resuming their
sessions. The rest of the rerun's decisions (what a rerun skips) are `plan.decide`'s."""

from __future__ import annotations

from pathlib import Path

import pytest

from oiexec.core.errors import FAILURE_CLASSES, UsageError
from oiexec.runner.batch.plan import Action, decide, parse_retry
from oiexec.runner.batch.record import Attempt, TaskRecord, checked_record, failure_class_of_record
from tests.batch.conftest import requests_for, run_batch, summary, write_tasks
from tests.support.model_server import ModelServer, call, fault, reply


def _record(status: str, failure_class: str | None = None, exit_code: int | None = 1) -> TaskRecord:
    return TaskRecord(
        index=0,
        id="t",
        status=status,
        exit_code=exit_code,
        failure_class=failure_class,
        input_hash="h",
    )


def test_retry_resumes_only_the_classes_named() -> None:
    transient = _record("failed", "transient")
    checked = _record("check_failed", "task", 8)
    assert decide(transient, "h", retry={"transient"}) is Action.RESUME
    assert decide(checked, "h", retry={"transient"}) is Action.SKIP
    assert decide(checked, "h", retry=set(FAILURE_CLASSES)) is Action.RESUME  # --retry-failed
    assert decide(_record("success", None, 0), "h", retry=set(FAILURE_CLASSES)) is Action.SKIP
    # Changed inputs always run afresh, whatever the class.
    assert decide(checked, "other", retry=set()) is Action.RUN


def test_a_record_from_before_classes_is_classed_by_its_exit_code() -> None:
    assert failure_class_of_record(_record("limit", None, 4)) == "budget"
    assert failure_class_of_record(_record("check_failed", None, 8)) == "task"
    assert failure_class_of_record(_record("failed", None, None)) == "internal"
    assert failure_class_of_record(_record("success", None, 0)) is None


def test_retry_names_are_checked() -> None:
    assert parse_retry("transient, budget") == {"transient", "budget"}
    with pytest.raises(UsageError) as info:
        parse_retry("transient,flaky")
    assert "'flaky'" in info.value.message
    assert "transient, budget, task" in (info.value.hint or "")


def test_a_record_with_an_unknown_class_is_not_taken() -> None:
    """A task can write its own result.json: a class no run writes is not believed."""
    data = _record("failed", "transient").summary_entry() | {"failure_class": "whatever"}
    with pytest.raises(ValueError, match="unknown failure class"):
        checked_record(data)
    history = [{"status": "failed", "exit_code": 1, "failure_class": "nope"}]
    with pytest.raises(ValueError, match="unknown failure class"):
        checked_record(_record("failed", "transient").summary_entry() | {"history": history})


def test_retry_transient_reruns_only_the_provider_outage(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [
            {"id": "outage", "prompt": "write a note [task:outage]", "repo": str(repo)},
            {
                "id": "unfixed",
                "prompt": "make it pass [task:unfixed]",
                "repo": str(repo),
                "check": "test -f done.txt",
            },
            {"id": "fine", "prompt": "say hi [task:fine]", "repo": str(repo)},
        ],
    )
    server = model_server
    note = reply(tool_calls=[call("exec_command", {"cmd": "echo note > note.txt"})])
    # The outage task gets one answer, then the provider fails it with 503s (no retries).
    server.route("[task:outage]", note, fault(503, message="overloaded"))
    # The checked task never makes done.txt: the check fails all 3 attempts (the default).
    server.route("[task:unfixed]", *[reply("done")] * 3)
    server.route("[task:fine]", reply("hi"))
    out = tmp_path / "out"

    first = run_batch(server, tasks, out, "--jobs", "2", cwd=tmp_path)

    assert first.returncode == 1, first.stderr
    by_id = {task["id"]: task for task in summary(out)["tasks"]}
    assert by_id["outage"]["failure_class"] == "transient"
    assert by_id["unfixed"]["failure_class"] == "task"
    assert by_id["fine"]["failure_class"] is None
    assert by_id["outage"]["history"] == [
        {"status": "failed", "exit_code": 1, "failure_class": "transient"}
    ]
    outage_requests = requests_for(server, "[task:outage]")
    unfixed_requests = requests_for(server, "[task:unfixed]")

    # The provider is back: only the outage task runs again, in its own session.
    server.route("[task:outage]", reply("the note is written"))
    second = run_batch(server, tasks, out, "--retry", "transient", cwd=tmp_path)

    assert second.returncode == 1, second.stderr  # the task failure still stands
    by_id = {task["id"]: task for task in summary(out)["tasks"]}
    assert by_id["outage"]["status"] == "success"
    assert by_id["outage"]["failure_class"] is None
    assert by_id["outage"]["attempts"] == 2
    assert by_id["outage"]["history"] == [
        {"status": "failed", "exit_code": 1, "failure_class": "transient"},
        {"status": "success", "exit_code": 0, "failure_class": None},
    ]
    assert requests_for(server, "[task:outage]") == outage_requests + 1
    assert requests_for(server, "[task:unfixed]") == unfixed_requests  # not retried
    assert by_id["unfixed"]["attempts"] == 1
    # Resumed, not restarted: the model saw its earlier turn (the note it wrote).
    last = [r for r in server.model_requests if "[task:outage]" in str(r.body)][-1]
    assert "echo note > note.txt" in str(last.body)

    bad = run_batch(server, tasks, out, "--retry", "flaky", cwd=tmp_path)
    assert bad.returncode == 2
    assert "unknown failure class 'flaky'" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_attempt_record_round_trips() -> None:
    record = _record("failed", "transient")
    record.history = [Attempt("failed", 1, "transient")]
    assert checked_record(record.summary_entry()).history == record.history
