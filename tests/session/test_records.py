"""Typed rollout records (oiexec/session/records.py): what is written is checked against its
model and carries a version; what is read parses through the union, skipping what this build
does not know; rollouts in the formats earlier versions wrote still load and resume."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from oiexec.core.errors import SessionError
from oiexec.core.events import AgentMessageItem, ItemCompleted, ThreadStarted, Usage
from oiexec.core.types import Message
from oiexec.session.index import FILE_STATE, list_sessions, load_rollout
from oiexec.session.records import (
    LEGACY_VERSION,
    ROLLOUT_VERSION,
    InvalidRecord,
    OtherEvent,
    TurnContext,
    UnknownRecord,
    check_record,
    parse_record,
)
from oiexec.session.store import NullStore, RolloutStore
from oiexec.session.views import session_detail
from tests.conftest import exec_args, run_cli
from tests.support.model_server import ModelServer, reply, usage, user_texts


def _create(home: Path, cwd: Path) -> RolloutStore:
    return RolloutStore.create(
        home, cwd=cwd, model_provider="openai", cli_version="t", base_instructions=None
    )


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# --- writing ------------------------------------------------------------------------------


def test_every_line_carries_the_version_beside_codex_keys(tmp_path: Path) -> None:
    with _create(tmp_path / "home", tmp_path) as store:
        store.append("response_item", Message(role="user", text="hi").model_dump())
        path = store.path
    assert path is not None
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        # Codex's keys in Codex's order; the version sits before the payload.
        assert list(record) == ["timestamp", "ordinal", "type", "version", "payload"]
        assert record["version"] == ROLLOUT_VERSION


@pytest.mark.parametrize(
    ("record_type", "payload", "complaint"),
    [
        ("turn_context", {"cwd": "/w", "modle": "x"}, "unknown field"),
        ("turn_context", {"cwd": 5}, "valid string"),
        ("event_msg", {"type": "task_complet"}, "unknown event_msg type"),
        ("event_msg", {"type": "token_count"}, "missing field"),
        ("event_msg", {"type": "thread_event", "event": {"type": "nope"}}, "nope"),
        ("event_msg", {"type": FILE_STATE, "stamp": None}, "missing field"),
        ("session_meta", {"cwd": "/w"}, "missing field"),
        ("response_item", {"kind": "message", "role": "user"}, "text"),
        ("compacted", {"message": "s"}, "missing field"),
        ("world_state", {}, "unknown record type"),
    ],
)
def test_a_bad_record_is_refused_and_never_written(
    tmp_path: Path, record_type: str, payload: dict[str, Any], complaint: str
) -> None:
    with _create(tmp_path / "home", tmp_path) as store:
        with pytest.raises(InvalidRecord, match=complaint):
            store.append(record_type, payload)
        with pytest.raises(InvalidRecord):
            NullStore().append(record_type, payload)
        assert store.next_ordinal == 1
        path = store.path
    assert path is not None
    assert [r["type"] for r in _lines(path)] == ["session_meta"]


def test_the_records_a_run_writes_are_valid() -> None:
    event = ItemCompleted(item=AgentMessageItem(id="item_0", text="hi"))
    check_record("event_msg", {"type": "thread_event", "event": event.model_dump()})
    check_record(
        "event_msg", {"type": "thread_event", "event": ThreadStarted(thread_id="t").model_dump()}
    )
    check_record("event_msg", {"type": "task_started"})
    check_record("event_msg", {"type": "turn_aborted", "reason": "killed", "closed_calls": 2})
    check_record(
        "event_msg",
        {"type": "token_count", "total_token_usage": Usage(input_tokens=3).model_dump()},
    )
    check_record(
        "event_msg",
        {
            "type": "task_complete",
            "last_agent_message": None,
            "duration_ms": 12,
            "status": "failed",
            "exit_code": 1,
            "failure": "boom",
        },
    )
    stamp = {"mtime_ns": 1, "sha256": "ab", "window": [None, 20], "written": False}
    check_record("event_msg", {"type": FILE_STATE, "path": "/w/a", "stamp": stamp})
    check_record("event_msg", {"type": FILE_STATE, "path": "/w/a", "stamp": None})
    history = [Message(role="user", text="x").model_dump(mode="json")]
    check_record("compacted", {"message": "summary", "replacement_history": history})
    check_record(
        "turn_context",
        {
            "cwd": "/w",
            "approval_policy": "never",
            "sandbox_policy": {
                "type": "workspace-write",
                "network_access": False,
                "exclude_tmpdir_env_var": False,
                "exclude_slash_tmp": False,
            },
            "model": "m",
            "model_provider": "p",
            "effort": None,
            "harness": "native",
            "writable_roots": ["/extra"],
            "network_access": True,
            "output_schema": {"type": "object"},
            "overrides": [
                {"name": "model", "before": "a", "after": "b", "source": "-m", "sandbox": False}
            ],
        },
    )


# --- reading ------------------------------------------------------------------------------


def test_reading_is_lenient_where_it_was_and_keeps_unknown_things() -> None:
    record = parse_record(
        {"type": "turn_context", "metadata": {}, "version": "x", "payload": {"cwd": 5, "x": 1}}
    )
    assert record.version == LEGACY_VERSION
    assert isinstance(record.payload, TurnContext)
    assert record.payload.cwd is None
    assert record.payload.model_extra == {"x": 1}
    assert isinstance(parse_record({"type": "world_state", "payload": {}}), UnknownRecord)
    other = parse_record({"type": "event_msg", "payload": {"type": ["odd"]}})
    assert isinstance(other.payload, OtherEvent)


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records), encoding="utf-8"
    )
    return path


def test_unknown_types_and_newer_versions_are_read_as_before(tmp_path: Path) -> None:
    thread = str(uuid.uuid4())
    meta = {"type": "session_meta", "payload": {"id": thread, "cwd": "/w"}}
    prompt = Message(role="user", text="go").model_dump(mode="json")
    path = _write(
        tmp_path / "r.jsonl",
        [
            meta,
            {"type": "world_state", "payload": {"agents_md": "x"}},
            {"type": "event_msg", "payload": {"type": "item_completed", "x": 1}},
            {"type": "turn_context", "payload": {"cwd": "/w"}},
            {"type": "response_item", "version": 9, "payload": {**prompt, "new_field": 1}},
            {"type": "response_item", "version": 9, "payload": prompt},
        ],
    )
    # A newer record that does not fit the current model says why it does not.
    with pytest.raises(SessionError, match=r"line 5: message.new_field: .*format 9"):
        load_rollout(path)
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:4] + lines[5:]) + "\n")
    # Unknown types are counted and skipped; a newer record that fits reads as it.
    loaded = load_rollout(path)
    assert loaded.ordinal_count == 5
    assert loaded.history == [Message(role="user", text="go")]


def test_corrupt_files_are_reported_as_before(tmp_path: Path) -> None:
    thread = str(uuid.uuid4())
    meta = {"type": "session_meta", "payload": {"id": thread}}
    cases: list[tuple[Any, str]] = [
        (
            {"type": "response_item", "payload": {"kind": "bogus"}},
            "line 2: : Input tag 'bogus' found using 'kind'",
        ),
        (
            {"type": "compacted", "payload": {"replacement_history": [{"kind": "message"}]}},
            "line 2: message.role: Field required",
        ),
        (
            {"type": "event_msg", "payload": {"type": "token_count", "total_token_usage": "x"}},
            "line 2: : Input should be a valid dictionary or instance of Usage",
        ),
        ({"type": "x"}, "line 2: not a rollout record"),
    ]
    for record, message in cases:
        path = _write(tmp_path / "r.jsonl", [meta, record])
        with pytest.raises(SessionError) as caught:
            load_rollout(path)
        assert f"corrupt session file {path}, {message}" in str(caught.value)
    path.write_text(json.dumps(meta) + "\n{not json\n")
    with pytest.raises(SessionError, match="line 2: Expecting property name enclosed"):
        load_rollout(path)


# --- rollouts as earlier versions wrote them ----------------------------------------------


def _first_format(thread: str, cwd: Path, prompt: str) -> list[dict[str, Any]]:
    """A rollout as the first release wrote it (no version; turn_context with Codex's fields
    only; task_complete without an outcome; tool outputs without `images`)."""
    stamp = "2026-12-02T10:00:00.000Z"
    payloads: list[tuple[str, dict[str, Any]]] = [
        (
            "session_meta",
            {
                "session_id": thread,
                "id": thread,
                "timestamp": stamp,
                "cwd": str(cwd),
                "originator": "oiexec_exec",
                "cli_version": "0.1.0",
                "source": "exec",
                "model_provider": "scripted",
                "base_instructions": {"text": None},
            },
        ),
        (
            "event_msg",
            {"type": "thread_event", "event": {"type": "thread.started", "thread_id": thread}},
        ),
        (
            "response_item",
            {"kind": "message", "role": "user", "text": "<environment_context/>", "images": []},
        ),
        (
            "turn_context",
            {
                "cwd": str(cwd),
                "approval_policy": "never",
                "sandbox_policy": {
                    "type": "danger-full-access",
                    "network_access": True,
                    "exclude_tmpdir_env_var": False,
                    "exclude_slash_tmp": False,
                },
                "model": "gpt-5.5",
                "model_provider": "scripted",
                "effort": None,
            },
        ),
        ("response_item", {"kind": "message", "role": "user", "text": prompt, "images": []}),
        ("event_msg", {"type": "task_started"}),
        (
            "response_item",
            {
                "kind": "tool_call",
                "call_id": "c1",
                "name": "exec_command",
                "arguments": '{"cmd":"ls"}',
                "call_type": "function",
            },
        ),
        (
            "response_item",
            {
                "kind": "tool_output",
                "call_id": "c1",
                "output": "a.txt",
                "call_type": "function",
                "is_error": False,
            },
        ),
        (
            "response_item",
            {"kind": "message", "role": "assistant", "text": "the answer is 42", "images": []},
        ),
        (
            "event_msg",
            {
                "type": "token_count",
                "total_token_usage": {
                    "input_tokens": 400,
                    "cached_input_tokens": 0,
                    "output_tokens": 10,
                    "reasoning_output_tokens": 0,
                },
            },
        ),
        (
            "event_msg",
            {"type": "task_complete", "last_agent_message": "the answer is 42", "duration_ms": 900},
        ),
    ]
    return [
        {"timestamp": stamp, "ordinal": n, "type": kind, "payload": payload}
        for n, (kind, payload) in enumerate(payloads)
    ]


def _codex_before_ordinals(thread: str, cwd: Path, prompt: str) -> list[dict[str, Any]]:
    """The same without `ordinal` (Codex before 0.169), plus record and event types this
    build does not write."""
    records = [
        {k: v for k, v in r.items() if k != "ordinal"} for r in _first_format(thread, cwd, prompt)
    ]
    records.insert(
        1, {"timestamp": records[0]["timestamp"], "type": "world_state", "payload": {"skills": []}}
    )
    records.insert(
        3,
        {
            "timestamp": records[0]["timestamp"],
            "type": "event_msg",
            "payload": {"type": "item_completed", "item": {"type": "UserMessage"}},
        },
    )
    return records


def _last_unversioned(thread: str, cwd: Path, prompt: str) -> list[dict[str, Any]]:
    """As written just before lines carried a version: outcome fields, restored settings, the
    read-before-write journal and a compaction."""
    records = _first_format(thread, cwd, prompt)
    records[3]["payload"].update(
        harness="native", writable_roots=[], network_access=True, output_schema=None, overrides=[]
    )
    records[-1]["payload"].update(status="completed", exit_code=0, failure=None)
    stamp = records[0]["timestamp"]
    summary = {
        "kind": "message",
        "role": "user",
        "text": f"summary: {prompt}; the answer was 42",
        "images": [],
    }
    extra = [
        {
            "type": "event_msg",
            "payload": {
                "type": FILE_STATE,
                "path": str(cwd / "a.txt"),
                "stamp": {"mtime_ns": 1, "sha256": "ab", "window": [None, None], "written": False},
            },
        },
        {"type": "compacted", "payload": {"message": "summary", "replacement_history": [summary]}},
    ]
    records[-1:-1] = [{"timestamp": stamp, **r} for r in extra]
    for n, record in enumerate(records):
        record["ordinal"] = n
    return records


@pytest.mark.parametrize("written_by", [_first_format, _codex_before_ordinals, _last_unversioned])
def test_rollouts_of_earlier_versions_load_list_and_resume(
    model_server: ModelServer, repo: Path, oi_home: Path, written_by: Any
) -> None:
    thread = str(uuid.uuid4())
    name = f"rollout-2026-12-02T10-00-00-{thread}.jsonl"
    path = _write(oi_home / "sessions/2026/12/02" / name, written_by(thread, repo, "what is it?"))
    before = len(_lines(path))

    loaded = load_rollout(path)
    assert loaded.thread_id == thread
    assert loaded.usage.input_tokens == 400
    assert loaded.runs == 1 and loaded.outcome.status == "completed"
    [info] = list_sessions(oi_home)
    assert info.preview == "what is it?"
    assert session_detail(path)["runs"][0]["prompt"] == "what is it?"

    model_server.enqueue(reply("still 42", usage=usage(input_tokens=100, output_tokens=5)))
    done = run_cli([*exec_args(model_server), "resume", thread, "and now?"], cwd=repo)
    assert done.returncode == 0, done.stderr
    assert done.events[0] == {"type": "thread.started", "thread_id": thread}
    assert done.events[-1]["usage"]["input_tokens"] == 500
    texts = user_texts(model_server.bodies[0])
    assert texts[-1] == "and now?"
    sent = json.dumps(model_server.bodies[0]["input"])
    assert (
        "the answer was 42" in sent
        if written_by is _last_unversioned
        else "the answer is 42" in sent
    )

    lines = _lines(path)
    old, new = lines[:before], lines[before:]
    assert old == written_by(thread, repo, "what is it?")  # the old lines are left as written
    assert new and all(r["version"] == ROLLOUT_VERSION for r in new)
    assert [r["ordinal"] for r in new] == list(range(before, len(lines)))
    assert load_rollout(path).runs == 2
