"""What crosses between the API and a run's process is JSON: the job comes back as it went,
nothing but the job's own classes is ever built from it, and a line the child sends that is
not a message is reported, never evaluated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oiexec.api.child import ExecJob, ReviewJob
from oiexec.api.wire import LineReader, decode_job, encode_job, encode_message
from oiexec.review.gate import GatePolicy
from oiexec.review.targets import CommitTarget
from oiexec.runner.request import ResumeTarget, new_request
from oiexec.runner.review import ReviewRequest


def test_jobs_cross_as_json_and_come_back_equal(tmp_path: Path) -> None:
    request = new_request(
        "fix it",
        cwd=tmp_path,
        cwd_name="cwd",
        overrides=('model="x"',),
        flags={"sandbox_mode": "read-only", "writable_roots": ["/a", "/b"], "n": 1.5},
        add_dirs=[tmp_path / "extra"],
        images=(tmp_path / "a.png",),
        output_schema={"type": "object", "properties": {"a": {"type": ["string", "null"]}}},
        resume=ResumeTarget(session_id="s1", last=False),
        max_cost=0.25,
    )
    for job in (
        ExecJob(request),
        ExecJob(request, diff=False),
        ReviewJob(ReviewRequest(exec=request, target=CommitTarget("abc", "t"), gate=GatePolicy(1))),
    ):
        data = json.loads(json.dumps(encode_job(job)))
        assert decode_job(data) == job


def test_only_the_jobs_classes_are_built() -> None:
    with pytest.raises(TypeError):
        encode_job(ExecJob(object()))  # type: ignore[arg-type]
    for data in (
        {"@class": "Popen", "fields": {"args": ["sh"]}},
        {"@class": "os.system", "fields": {}},
        {"@class": "ExecJob", "fields": [], "x": 1},
        {"unknown": 1},
    ):
        with pytest.raises(ValueError):
            decode_job(data)


def test_lines_the_child_sends_are_messages_or_reported() -> None:
    reader = LineReader()
    first = encode_message(("event", '{"type": "thread.started"}'))
    assert reader.feed(first[:5]) == []
    assert reader.feed(first[5:] + encode_message(("warning", "a\nb"))[:-1]) == [
        ("event", '{"type": "thread.started"}')
    ]
    assert reader.feed(b"\n") == [("warning", "a\nb")]
    ((kind, text),) = reader.feed(b"\x80\x04\x95cos.system R.\n")
    assert kind == "crash" and "unreadable message" in text
