"""Where tasks run and when they run again: a URL is cloned at `ref`; a rerun with changed
options runs a finished task again, one with the same options does not."""

from __future__ import annotations

from pathlib import Path

from tests.batch.conftest import (
    requests_for,
    run_batch,
    source_state,
    statuses,
    summary,
    write_tasks,
)
from tests.conftest import git
from tests.support.model_server import ModelServer, call, reply


def test_url_task_runs_in_a_clone_at_its_ref(
    model_server: ModelServer, repo2: Path, tmp_path: Path
) -> None:
    git(repo2, "checkout", "-q", "-b", "feature")
    (repo2 / "feature.txt").write_text("feature\n")
    git(repo2, "add", "-A")
    git(repo2, "commit", "-q", "-m", "feature")
    git(repo2, "checkout", "-q", "main")
    tasks = write_tasks(
        tmp_path / "t.jsonl",
        [{"id": "remote", "prompt": "list [task:r]", "repo": f"file://{repo2}", "ref": "feature"}],
    )
    model_server.route(
        "[task:r]", reply(tool_calls=[call("exec_command", {"cmd": "ls > seen.txt"})]), reply("ok")
    )

    result = run_batch(model_server, tasks, tmp_path / "out", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    patch = (tmp_path / "out" / "remote" / "diff.patch").read_text()
    assert "+feature.txt" in patch  # the clone was at `feature`, not at main
    assert not (tmp_path / "out" / "remote" / "worktree").exists()
    assert git(repo2, "status", "--porcelain") == ""


def test_rerun_skips_same_inputs_and_reruns_changed_ones(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    tasks = write_tasks(tmp_path / "t.jsonl", [{"id": "one", "prompt": "go [task:one]"}])
    model_server.route("[task:one]", reply("first"), reply("second"))
    out = tmp_path / "out"

    assert run_batch(model_server, tasks, out, cwd=repo).returncode == 0
    same = run_batch(model_server, tasks, out, cwd=repo)
    assert same.returncode == 0 and requests_for(model_server, "[task:one]") == 1
    assert "one: success (finished in an earlier run)" in same.stderr

    changed = run_batch(model_server, tasks, out, "-c", "model_reasoning_effort=high", cwd=repo)
    assert changed.returncode == 0, changed.stderr
    assert requests_for(model_server, "[task:one]") == 2
    assert statuses(out) == {"one": "success"}
    assert (out / "one" / "last-message.txt").read_text().strip() == "second"
    assert summary(out)["tasks"][0]["attempts"] == 1


def test_a_relative_out_lands_where_it_was_run_not_in_the_source_repository(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    """`--out runs` names a directory beside the caller; git adds the worktrees from inside
    the task's repository, so a path left relative would put them into the source checkout."""
    where = tmp_path / "cron"
    where.mkdir()
    tasks = write_tasks(
        where / "t.jsonl", [{"id": "one", "prompt": "go [task:one]", "repo": str(repo)}]
    )
    model_server.route("[task:one]", reply("done"))
    before = source_state(repo)

    result = run_batch(model_server, tasks, Path("runs"), cwd=where)

    assert result.returncode == 0, result.stderr
    assert statuses(where / "runs") == {"one": "success"}
    assert source_state(repo) == before
    assert not (repo / "runs").exists()
