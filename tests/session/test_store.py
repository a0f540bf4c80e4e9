from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from oiexec.core.errors import SessionError
from oiexec.core.events import Usage
from oiexec.core.protocols import SessionStore
from oiexec.core.redact import clear_secrets, register_secret
from oiexec.core.types import Message, Reasoning, ToolCall, ToolOutput
from oiexec.session.index import (
    FILE_STATE,
    find_last,
    find_rollout,
    list_sessions,
    load_rollout,
)
from oiexec.session.store import NullStore, RolloutStore, fork_rollout, uuid7


def _create(home: Path, cwd: Path, provider: str = "openai") -> RolloutStore:
    return RolloutStore.create(
        home,
        cwd=cwd,
        model_provider=provider,
        cli_version="0.1.0",
        base_instructions="be helpful",
    )


def _records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _run_turn(store: RolloutStore, cwd: Path, prompt: str, usage: Usage) -> None:
    store.append("turn_context", {"cwd": str(cwd), "approval_policy": "never"})
    store.append("response_item", Message(role="user", text=prompt).model_dump())
    store.append(
        "response_item",
        ToolCall(call_id="c1", name="exec_command", arguments='{"cmd":"ls"}').model_dump(),
    )
    store.append("response_item", ToolOutput(call_id="c1", output="a.txt").model_dump())
    store.append("response_item", Message(role="assistant", text="done").model_dump())
    store.append("event_msg", {"type": "token_count", "total_token_usage": usage.model_dump()})


def test_uuid7_is_version_7_and_time_ordered() -> None:
    ids = [uuid7() for _ in range(500)]
    assert all(i.version == 7 and i.variant == uuid.RFC_4122 for i in ids)
    assert ids == sorted(ids, key=lambda u: u.bytes)
    assert len(set(ids)) == len(ids)
    ms = ids[0].int >> 80
    assert abs(ms - time.time() * 1000) < 5_000


def test_create_writes_meta_path_layout_and_ordinals(tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "work"
    cwd.mkdir()
    with _create(home, cwd) as store:
        _run_turn(store, cwd, "fix it", Usage(input_tokens=10, output_tokens=2))
        path = store.path
    assert path is not None
    rel = path.relative_to(home / "sessions")
    year, month, day, name = rel.parts
    assert name.startswith(f"rollout-{year}-{month}-{day}T")
    assert name.endswith(f"-{store.thread_id}.jsonl")
    records = _records(path)
    assert [r["ordinal"] for r in records] == list(range(len(records)))
    assert all(str(r["timestamp"]).endswith("Z") for r in records)
    meta = records[0]
    assert meta["type"] == "session_meta"
    payload = meta["payload"]
    assert isinstance(payload, dict)
    assert payload["id"] == payload["session_id"] == store.thread_id
    assert payload["source"] == "exec"
    assert payload["originator"] == "oiexec_exec"
    assert payload["base_instructions"] == {"text": "be helpful"}
    assert payload["cwd"] == str(cwd)
    assert "git" not in payload  # not a repository
    assert uuid.UUID(store.thread_id).version == 7


def test_meta_records_git_commit_and_branch(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e"]
    subprocess.run([*git, "init", "-q", "-b", "trunk"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    head = subprocess.run(
        [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    with _create(tmp_path / "home", repo) as store:
        path = store.path
    assert path is not None
    assert _records(path)[0]["payload"]["git"] == {  # type: ignore[index]
        "commit_hash": head,
        "branch": "trunk",
    }


def test_load_rebuilds_history_and_last_usage(tmp_path: Path) -> None:
    cwd = tmp_path
    with _create(tmp_path / "home", cwd) as store:
        store.append("response_item", Reasoning(summary=("think",), content="x").model_dump())
        _run_turn(store, cwd, "one", Usage(input_tokens=100, output_tokens=5))
        _run_turn(store, cwd, "two", Usage(input_tokens=400, output_tokens=100))
        path = store.path
    assert path is not None
    loaded = load_rollout(path)
    assert loaded.thread_id == store.thread_id
    assert loaded.usage == Usage(input_tokens=400, output_tokens=100)
    assert loaded.history[0] == Reasoning(summary=("think",), content="x")
    assert [type(i).__name__ for i in loaded.history[1:5]] == [
        "Message",
        "ToolCall",
        "ToolOutput",
        "Message",
    ]
    assert len(loaded.history) == 9
    assert loaded.ordinal_count == len(_records(path))
    assert loaded.model_provider == "openai"


def test_secrets_are_redacted_in_every_string(tmp_path: Path) -> None:
    register_secret('sk-live-"quoted"-123456')
    try:
        with _create(tmp_path / "home", tmp_path) as store:
            store.append(
                "response_item",
                ToolOutput(call_id="c", output='key=sk-live-"quoted"-123456 ok').model_dump(),
            )
            path = store.path
    finally:
        clear_secrets()
    assert path is not None
    text = path.read_text(encoding="utf-8")
    assert "sk-live" not in text
    history = load_rollout(path).history
    assert history == [ToolOutput(call_id="c", output="key=[REDACTED] ok")]


_WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from oiexec.session.store import RolloutStore
    from oiexec.core.types import ToolOutput
    store = RolloutStore.create(Path(sys.argv[1]), cwd=Path(sys.argv[2]),
        model_provider="openai", cli_version="t", base_instructions=None)
    print(store.path, flush=True)
    i = 0
    while True:
        store.append("response_item",
                     ToolOutput(call_id=f"c{i}", output="x" * 200_000).model_dump())
        i += 1
    """
)


def test_killed_writer_leaves_a_loadable_rollout_and_resume_appends(tmp_path: Path) -> None:
    home = tmp_path / "home"
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(home), str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    path = Path(proc.stdout.readline().strip())
    deadline = time.monotonic() + 20
    while path.stat().st_size < 2_000_000 and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()

    loaded = load_rollout(path)
    assert len(loaded.history) >= 5
    assert all(isinstance(i, ToolOutput) for i in loaded.history)

    # Resuming continues the ordinals after the last complete record, on a fresh line.
    with RolloutStore.open_existing(path) as store:
        assert store.thread_id == loaded.thread_id
        store.append("response_item", Message(role="user", text="again").model_dump())
    records = _records(path)  # every line parses
    assert [r["ordinal"] for r in records] == list(range(len(records)))
    assert load_rollout(path).history[-1] == Message(role="user", text="again")


def test_truncated_last_line_is_tolerated_but_other_corruption_is_reported(
    tmp_path: Path,
) -> None:
    with _create(tmp_path / "home", tmp_path) as store:
        _run_turn(store, tmp_path, "p", Usage(input_tokens=1))
        path = store.path
    assert path is not None
    good = path.read_bytes()
    path.write_bytes(good + b'{"timestamp":"2025-01-01T00:00:00.000Z","ordinal":7,"ty')
    assert len(load_rollout(path).history) == 4
    with RolloutStore.open_existing(path) as store:
        store.append("response_item", Message(role="user", text="resumed").model_dump())
    records = _records(path)  # the half record was cut, so every line parses
    assert [r["ordinal"] for r in records] == list(range(len(records)))
    assert load_rollout(path).history[-1] == Message(role="user", text="resumed")
    good = path.read_bytes()

    lines = good.split(b"\n")
    lines[3] = b"{not json"
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(SessionError, match=rf"{path.name}, line 4"):
        load_rollout(path)

    lines[3] = json.dumps({"type": "response_item", "payload": {"kind": "bogus"}}).encode()
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(SessionError, match="line 4"):
        load_rollout(path)

    path.write_bytes(b"")
    with pytest.raises(SessionError, match="session_meta"):
        load_rollout(path)


def test_resume_appends_to_the_same_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with _create(home, tmp_path) as store:
        _run_turn(store, tmp_path, "one", Usage(input_tokens=400, output_tokens=100))
        path = store.path
    assert path is not None
    assert find_rollout(home, store.thread_id) == path
    assert find_rollout(home, store.thread_id.upper()) == path
    assert find_rollout(home, str(uuid7())) is None
    assert find_rollout(home, "not-a-uuid") is None

    before = load_rollout(path)
    with RolloutStore.open_existing(path) as resumed:
        _run_turn(resumed, tmp_path, "two", Usage(input_tokens=900, output_tokens=150))
    after = load_rollout(path)
    assert len(list((home / "sessions").rglob("*.jsonl"))) == 1
    assert after.thread_id == before.thread_id
    assert after.history[: len(before.history)] == before.history
    assert Message(role="user", text="two") in after.history[len(before.history) :]
    assert after.usage.input_tokens == 900


def test_fork_copies_history_and_usage_into_a_new_thread(tmp_path: Path) -> None:
    home = tmp_path / "home"
    read = {"type": FILE_STATE, "path": "/w/a.py", "stamp": {"mtime_ns": 1, "sha256": "ab"}}
    with _create(home, tmp_path) as parent:
        _run_turn(parent, tmp_path, "one", Usage(input_tokens=400, output_tokens=100))
        parent.append("event_msg", read)
        parent_path = parent.path
    assert parent_path is not None
    parent_loaded = load_rollout(parent_path)
    assert parent_loaded.file_state == (read,)
    with fork_rollout(
        home,
        parent_path,
        cwd=tmp_path,
        model_provider="openai",
        cli_version="t",
        base_instructions="b",
    ) as child:
        child_path = child.path
        assert child.thread_id != parent.thread_id
    assert child_path is not None and child_path != parent_path
    meta = _records(child_path)[0]["payload"]
    assert meta["forked_from_id"] == parent.thread_id  # type: ignore[index]
    assert meta["forked_from_ordinal_exclusive"] == parent_loaded.ordinal_count  # type: ignore[index]
    child_loaded = load_rollout(child_path)
    assert child_loaded.history == parent_loaded.history
    assert child_loaded.usage == Usage(input_tokens=400, output_tokens=100)
    # The fork's model saw the parent's reads: the read-before-edit state goes with them.
    assert child_loaded.file_state == (read,)
    # The parent is untouched.
    assert load_rollout(parent_path) == parent_loaded


def test_find_last_filters_by_cwd_and_provider(tmp_path: Path) -> None:
    home = tmp_path / "home"
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    paths: dict[str, Path] = {}
    for name, cwd, provider in (
        ("a-openai", a, "openai"),
        ("b-openai", b, "openai"),
        ("a-other", a, "other"),
    ):
        with _create(home, cwd, provider) as store:
            _run_turn(store, cwd, name, Usage())
            assert store.path is not None
            paths[name] = store.path
    # Order by last update: a-openai is touched last.
    for offset, name in enumerate(("b-openai", "a-other", "a-openai")):
        os.utime(paths[name], (1_000_000 + offset, 1_000_000 + offset))

    assert find_last(home, cwd=a, model_provider="openai") == paths["a-openai"]
    assert find_last(home, cwd=b, model_provider="openai") == paths["b-openai"]
    assert find_last(home, cwd=a, model_provider="other") == paths["a-other"]
    assert find_last(home, cwd=tmp_path, model_provider="openai") is None
    assert (
        find_last(home, cwd=tmp_path, model_provider="openai", all_cwds=True) == paths["a-openai"]
    )
    assert find_last(tmp_path / "nowhere", cwd=a, model_provider="openai") is None

    # The latest turn_context decides: a thread resumed from b now belongs to b.
    with RolloutStore.open_existing(paths["a-openai"]) as store:
        store.append("turn_context", {"cwd": str(b)})
    assert find_last(home, cwd=b, model_provider="openai") == paths["a-openai"]
    assert find_last(home, cwd=a, model_provider="openai") is None

    infos = list_sessions(home, cwd=b)
    assert [i.path for i in infos] == [paths["a-openai"], paths["b-openai"]]
    assert infos[1].preview == "b-openai"
    assert len(list_sessions(home)) == 3


def test_null_store_writes_nothing(tmp_path: Path) -> None:
    store: SessionStore = NullStore()
    store.append("session_meta", {"id": store.thread_id})
    store.close()
    assert store.path is None
    assert uuid.UUID(store.thread_id).version == 7
    assert list(tmp_path.iterdir()) == []


def test_append_after_close_is_an_error(tmp_path: Path) -> None:
    store: SessionStore = _create(tmp_path / "home", tmp_path)
    store.close()
    store.close()
    with pytest.raises(SessionError, match="closed"):
        store.append("event_msg", {"type": "x"})


def test_the_session_cost_is_the_last_total_and_a_fork_inherits_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with _create(home, tmp_path) as parent:
        _run_turn(parent, tmp_path, "one", Usage(input_tokens=400, output_tokens=100))
        parent.append("event_msg", {"type": "task_complete", "status": "completed"})
        assert parent.path is not None
        # A rollout from before costs were kept: its cost is unknown, not zero.
        assert load_rollout(parent.path).cost_usd is None
        usage = Usage(input_tokens=800, output_tokens=200).model_dump()
        parent.append(
            "event_msg",
            {"type": "token_count", "total_token_usage": usage, "session_cost_usd": 0.25},
        )
        parent.append(
            "event_msg", {"type": "task_complete", "status": "completed", "cost_usd": 0.125}
        )
        parent_path = parent.path
    assert load_rollout(parent_path).cost_usd == 0.25
    [info] = list_sessions(home)
    assert info.cost_usd == 0.25
    with fork_rollout(
        home, parent_path, cwd=tmp_path, model_provider="openai", cli_version="t",
        base_instructions="b",
    ) as child:  # fmt: skip
        child_path = child.path
    assert child_path is not None
    # The fork's own runs add to what its parent had cost (exec: session_cost_usd).
    assert load_rollout(child_path).cost_usd == 0.25
