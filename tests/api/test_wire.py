"""What crosses between the API and a run's process is JSON: the job comes back as it went,
nothing but the job's own classes is ever built from it, and a line the child sends that is
not a message is reported, never evaluated."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from oiexec.api.child import ExecJob, ReviewJob
from oiexec.api.wire import decode_job, encode_job
from oiexec.review.gate import GatePolicy
from oiexec.review.targets import CommitTarget
from oiexec.runner.child_protocol import (
    LineReader,
    ProtocolError,
    RunMessage,
    SocketReader,
    checked,
    encode,
    send,
)
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
    first = encode({"op": "event", "line": '{"type": "thread.started"}'})
    assert reader.feed(first[:5]) == []
    assert reader.feed(first[5:] + encode({"op": "warning", "text": "a\nb"})[:-1]) == [
        {"op": "event", "line": '{"type": "thread.started"}'}
    ]
    assert reader.feed(b"\n") == [{"op": "warning", "text": "a\nb"}]
    (unreadable,) = reader.feed(b"\x80\x04\x95cos.system R.\n")
    assert isinstance(unreadable, ProtocolError) and "not JSON" in str(unreadable)
    (not_a_message,) = reader.feed(b'["event", "x"]\n')
    assert isinstance(not_a_message, ProtocolError)


def test_a_line_too_long_is_skipped_and_the_next_one_reads() -> None:
    reader = LineReader(max_line=10)
    assert reader.feed(b'{"op": "crash", "text": "') == []
    assert reader.feed(b"x" * 20) == []
    too_long, after = reader.feed(b'"}\n' + encode({"op": "crash", "text": "t"}))
    assert isinstance(too_long, ProtocolError) and "longer than 10" in str(too_long)
    assert after == {"op": "crash", "text": "t"}


def test_messages_are_checked_against_the_vocabulary() -> None:
    ok = {"op": "error", "classes": ["UsageError"], "message": "m", "hint": None}
    assert checked(ok, RunMessage) == ok
    for bad in (
        {"op": "error", "classes": "UsageError", "message": "m", "hint": None},
        {"op": "interrupted", "message": "m", "exit_code": True},
        {"op": "done"},
        {"op": "exec", "cmd": "sh"},
    ):
        with pytest.raises(ProtocolError):
            checked(bad, RunMessage)


def test_a_lines_descriptors_are_its_own() -> None:
    """Descriptors go to the line they came with, never to one before it that claims
    them, nor to one that says none."""
    left, right = socket.socketpair()
    pipe_r, pipe_w = os.pipe()
    reader = SocketReader(right)
    try:
        # Written at once, so that one read could take all three.
        left.sendall(encode({"op": "spawn", "fds": 1}) + encode({"op": "spawn"}))
        send(left, {"op": "spawn", "id": 1}, [pipe_r])
        got: list[tuple[object, list[int]]] = []
        while len(got) < 3:
            received = reader.receive()
            assert received is not None
            got += received
        (claims, none), (says_none, also_none), (own, fds) = got
        assert isinstance(claims, ProtocolError) and none == []
        assert says_none == {"op": "spawn"} and also_none == []
        assert own == {"op": "spawn", "id": 1, "fds": 1} and len(fds) == 1
        assert os.fstat(fds[0]).st_ino == os.fstat(pipe_r).st_ino
        os.close(fds[0])
    finally:
        reader.close()
        for fd in (pipe_r, pipe_w):
            os.close(fd)
        left.close()
        right.close()
