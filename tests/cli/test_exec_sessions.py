"""Sessions through the CLI: rollouts, resume (by id and --last), fork, ephemeral."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_json_failures import only_failure
from tests.conftest import exec_args, run_cli
from tests.support.model_server import ModelServer, reply, usage, user_texts


def _rollouts(home: Path) -> list[Path]:
    return sorted((home / "sessions").rglob("rollout-*.jsonl"))


def _records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_rollout_is_written_and_resume_appends(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    model_server.enqueue(
        reply("first answer", usage=usage(input_tokens=400, output_tokens=10)),
        reply("second answer", usage=usage(input_tokens=100, output_tokens=5)),
    )
    first = run_cli([*exec_args(model_server), "remember the number 42"], cwd=repo)
    assert first.returncode == 0, first.stderr
    thread_id = first.events[0]["thread_id"]
    [rollout] = _rollouts(oi_home)
    assert rollout.name.endswith(f"-{thread_id}.jsonl")
    records = _records(rollout)
    assert records[0]["type"] == "session_meta"
    assert [r["ordinal"] for r in records] == list(range(len(records)))

    second = run_cli([*exec_args(model_server), "resume", thread_id, "what was it?"], cwd=repo)
    assert second.returncode == 0, second.stderr
    assert second.events[0] == {"type": "thread.started", "thread_id": thread_id}
    assert _rollouts(oi_home) == [rollout]
    # The resumed request carries the whole conversation, in order.
    texts = user_texts(model_server.bodies[1])
    assert texts.index("remember the number 42") < texts.index("what was it?")
    assert "first answer" in json.dumps(model_server.bodies[1]["input"])
    # Usage is cumulative per thread; item ids restart per invocation.
    assert second.events[-1]["usage"]["input_tokens"] == 500
    assert second.items("agent_message")[0]["id"] == "item_0"
    assert [r["ordinal"] for r in _records(rollout)] == list(range(len(_records(rollout))))


def test_resume_last_picks_the_newest_session_of_this_directory(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / ".git").mkdir()
    (other / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    model_server.enqueue(reply("in repo"), reply("in other"), reply("resumed"))
    here = run_cli([*exec_args(model_server), "task here"], cwd=repo)
    run_cli([*exec_args(model_server), "task elsewhere"], cwd=other)
    resumed = run_cli([*exec_args(model_server), "resume", "--last", "continue"], cwd=repo)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.events[0]["thread_id"] == here.events[0]["thread_id"]
    assert "task here" in user_texts(model_server.bodies[-1])
    assert "task elsewhere" not in user_texts(model_server.bodies[-1])


def test_top_level_resume_last(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(reply("one"), reply("two"))
    first = run_cli([*exec_args(model_server), "start"], cwd=repo)
    args = [a for a in exec_args(model_server) if a != "exec"]
    second = run_cli(["resume", "--last", *args, "again"], cwd=repo)
    assert second.returncode == 0, second.stderr
    assert second.events[0]["thread_id"] == first.events[0]["thread_id"]


def test_resume_last_without_a_session_is_a_usage_error_unless_or_new(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    model_server.enqueue(reply("fresh"))
    missing = run_cli([*exec_args(model_server), "resume", "--last", "hello"], cwd=repo)
    assert missing.returncode == 2, missing.stderr
    assert f"no session to resume in {repo}" in missing.stderr
    assert "interpreter sessions list --all" in missing.stderr and "--or-new" in missing.stderr
    assert "to resume in" in only_failure(missing) and _rollouts(oi_home) == []
    assert model_server.bodies == []

    fresh = run_cli([*exec_args(model_server), "resume", "--last", "--or-new", "hello"], cwd=repo)
    assert fresh.returncode == 0, fresh.stderr
    assert "starting a new one (--or-new)" in fresh.stderr
    [rollout] = _rollouts(oi_home)
    assert rollout.name.endswith(f"-{fresh.events[0]['thread_id']}.jsonl")


def test_resume_unknown_id_fails_clearly(model_server: ModelServer, repo: Path) -> None:
    missing = "01a23633-9971-7106-8a4b-f1c59b9b610b"
    result = run_cli([*exec_args(model_server), "resume", missing, "x"], cwd=repo)
    assert result.returncode == 1
    assert f"no rollout found for thread id {missing}" in result.stderr
    assert missing in only_failure(result)


def test_fork_copies_history_into_a_new_thread(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    model_server.enqueue(
        reply("parent answer", usage=usage(input_tokens=400, output_tokens=0)),
        reply("fork answer", usage=usage(input_tokens=100, output_tokens=0)),
    )
    parent = run_cli([*exec_args(model_server), "parent task"], cwd=repo)
    parent_id = parent.events[0]["thread_id"]
    fork = run_cli([*exec_args(model_server), "fork", parent_id, "fork task"], cwd=repo)
    assert fork.returncode == 0, fork.stderr
    fork_id = fork.events[0]["thread_id"]
    assert fork_id != parent_id
    assert "parent task" in user_texts(model_server.bodies[1])
    assert fork.events[-1]["usage"]["input_tokens"] == 500
    rollouts = _rollouts(oi_home)
    assert len(rollouts) == 2
    fork_meta = next(_records(p)[0] for p in rollouts if p.name.endswith(f"{fork_id}.jsonl"))
    assert fork_meta["payload"]["forked_from_id"] == parent_id  # type: ignore[index]
    # The parent rollout is untouched by the fork.
    parent_path = next(p for p in rollouts if p.name.endswith(f"{parent_id}.jsonl"))
    assert "fork task" not in parent_path.read_text()


def test_ephemeral_writes_no_rollout(model_server: ModelServer, repo: Path, oi_home: Path) -> None:
    model_server.enqueue(reply("ok"))
    result = run_cli([*exec_args(model_server), "--ephemeral", "x"], cwd=repo)
    assert result.returncode == 0
    assert _rollouts(oi_home) == []
