"""A batch in GitHub Actions writes one step-summary block for the whole batch (not one per
task: the tasks' children do not get `$GITHUB_STEP_SUMMARY`), and one `::error` when it fails;
a batch stopped by a usage error says why there too."""

from __future__ import annotations

from pathlib import Path

from tests.batch.conftest import run_batch, write_tasks
from tests.support.model_server import ModelServer, call, reply


def test_one_summary_block_for_the_batch_and_an_error_line_when_a_task_failed(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [
            {"id": "good", "prompt": "hi [task:good]", "repo": str(repo)},
            {"id": "bad", "prompt": "hi [task:bad]", "repo": str(repo), "max_turns": 1},
        ],
    )
    model_server.route("[task:good]", reply("hello"))
    # `bad` asks for a command, then runs out of turns: exit 4, status `limit`.
    model_server.route(
        "[task:bad]",
        reply(tool_calls=[call("exec_command", {"cmd": "true"})]),
    )
    step_summary = tmp_path / "step-summary.md"
    step_summary.write_text("# an earlier step\n")
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(step_summary)}

    result = run_batch(model_server, tasks, tmp_path / "out", "--jobs", "1", cwd=tmp_path, env=env)

    assert result.returncode == 1, result.stderr
    text = step_summary.read_text()
    assert text.startswith("# an earlier step\n")  # appended, never replaced
    assert text.count("### oiexec") == 1, text  # the batch's block only, none per task
    assert "### oiexec batch tasks: 1 of 2 task(s) succeeded" in text
    assert "bad (limit)" in text and "1 success, 1 limit" in text
    assert str(tmp_path / "out" / "summary.json") in text
    errors = [line for line in result.stderr.splitlines() if line.startswith("::error")]
    assert len(errors) == 1 and "bad (limit)" in errors[0] and "exit code 1" in errors[0]

    # A batch that cannot start (no tasks file) reports why, in one block.
    step_summary.write_text("")
    missing = run_batch(
        model_server, tmp_path / "nope.jsonl", tmp_path / "out2", cwd=tmp_path, env=env
    )
    assert missing.returncode == 2, missing.stderr
    assert step_summary.read_text().count("### oiexec batch") == 1
    assert "nope.jsonl" in step_summary.read_text()
    assert any(line.startswith("::error") for line in missing.stderr.splitlines())
