"""exec in CI: in GitHub Actions, `::error` on every failure and a block appended to
`$GITHUB_STEP_SUMMARY` on every exit; in GitLab CI, each turn a collapsed log section."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from oiexec.core.events import Usage
from oiexec.output.ci import RunSummary, TurnFolds, render_summary, workflow_command
from tests.conftest import FIX_PATCH, exec_args, run_cli
from tests.support.model_server import ModelServer, apply_patch_call, call, reply, usage

EARLIER = "## an earlier step\n"


def _github(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    summary = tmp_path / "step-summary.md"
    summary.write_text(EARLIER)  # appended to, never replaced
    return summary, {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("::error")]


def test_github_success_appends_the_summary_and_keeps_stdout_jsonl(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    summary, env = _github(tmp_path)
    junit, patch = tmp_path / "report.xml", tmp_path / "change.patch"
    model_server.enqueue(
        reply(
            tool_calls=[call("exec_command", {"cmd": "echo new > added.txt"})],
            usage=usage(1000, 100, cached_input_tokens=400),
        ),
        reply("done", usage=usage(2000, 50)),
    )
    args = [
        *exec_args(model_server),
        *("-c", "model_pricing.input_per_mtok=2", "-c", "model_pricing.output_per_mtok=10"),
        *("--junit", str(junit), "--diff", str(patch)),
        "add a file",
    ]
    started = time.monotonic()
    result = run_cli(args, cwd=repo, env=env, timeout=60)

    assert time.monotonic() - started < 60
    assert result.returncode == 0, result.stderr
    assert _errors(result.stderr) == []
    # Workflow commands go to stderr: every stdout line is still one JSON event.
    assert [json.loads(line)["type"] for line in result.stdout.splitlines()][-1] == (
        "turn.completed"
    )
    text = summary.read_text()
    assert text.startswith(EARLIER + "\n### oiexec exec: success\n")
    block = text[len(EARLIER) :]
    assert "| Exit code | 0 |" in block
    assert "| Turns | 2 |" in block
    assert "| Tokens | 3,000 input (400 cached), 150 output |" in block
    # 2600 fresh + 400 cached input at $2/Mtok, 150 output at $10/Mtok.
    assert "| Cost | $0.0075 |" in block
    assert "| Changed files | 1: <code>added.txt</code> |" in block
    assert f"--junit <code>{junit}</code>" in block and f"--diff <code>{patch}</code>" in block


def test_github_failed_run_says_why_in_an_error_and_the_summary(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    summary, env = _github(tmp_path)
    # Read-only: the patch is refused, and the summary says so.
    model_server.enqueue(reply(tool_calls=[apply_patch_call(FIX_PATCH)]))
    args = [
        "exec",
        "-s",
        "read-only",
        *model_server.config_args(),
        *("--max-turns", "1", "go"),
    ]
    result = run_cli(args, cwd=repo, env=env, timeout=60)

    assert result.returncode == 4, result.stderr
    [error] = _errors(result.stderr)
    assert error.startswith("::error title=oiexec exec::")
    assert "--max-turns 1" in error and error.endswith("(exit code 4)")
    # Human mode folds the turn; the groups are balanced.
    lines = result.stderr.splitlines()
    assert lines.count("::group::Turn 1") == 1 and lines.count("::endgroup::") == 1
    block = summary.read_text()[len(EARLIER) :]
    assert "### oiexec exec: limit" in block
    assert "| Exit code | 4 |" in block and "| Turns | 1 |" in block
    assert "| Reason | turn limit reached" in block
    assert "| Note | the sandbox (read-only) refused 1 write(s)" in block
    assert "Traceback" not in result.stderr


def test_github_usage_error_gets_an_error_and_a_short_summary(repo: Path, tmp_path: Path) -> None:
    summary, env = _github(tmp_path)
    junit = tmp_path / "report.xml"
    result = run_cli(
        ["exec", "resume", "--json", "--junit", str(junit)], cwd=repo, env=env, timeout=30
    )

    assert result.returncode == 2, result.stderr
    [error] = _errors(result.stderr)
    assert "exec resume needs a SESSION_ID or --last" in error
    block = summary.read_text()[len(EARLIER) :]
    assert "### oiexec exec: failed" in block and "| Exit code | 2 |" in block
    assert "exec resume needs a SESSION_ID" in block
    assert "| Turns |" not in block and "| Reports |" not in block  # nothing ran
    for line in result.stdout.splitlines():
        json.loads(line)
    assert "Traceback" not in result.stderr


def test_gitlab_folds_each_turn_into_a_balanced_collapsed_section(
    model_server: ModelServer, repo: Path
) -> None:
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": "echo one"})]),
        reply(tool_calls=[call("exec_command", {"cmd": "echo two"})]),
        reply("done"),
    )
    args = ["exec", "-s", "danger-full-access", *model_server.config_args(), "go"]
    result = run_cli(args, cwd=repo, env={"GITLAB_CI": "true"}, timeout=60)

    assert result.returncode == 0, result.stderr
    assert result.stdout == "done\n"
    marker = re.compile(r"\x1b\[0Ksection_(start|end):(\d+):([\w.-]+?)(\[collapsed=true\])?\r")
    found = [m.groups() for m in marker.finditer(result.stderr)]
    starts = [name for kind, _, name, _ in found if kind == "start"]
    assert len(starts) == 3 and len(set(starts)) == 3  # one per turn, names unique
    assert all(collapsed for kind, _, _, collapsed in found if kind == "start")
    # Each section ends before the next begins, under its own name.
    assert [(kind, name) for kind, _, name, _ in found] == [
        (kind, name) for name in starts for kind in ("start", "end")
    ]
    assert "::group::" not in result.stderr


def test_summary_cells_cannot_break_the_table() -> None:
    block = render_summary(
        RunSummary(
            command="exec",
            outcome="failed",
            exit_code=1,
            reason="a | b\n<script>",
            usage=Usage(),
            changed_files=[f"f{n}|`x`.py" for n in range(25)],
        )
    )
    assert "| Reason | a &#124; b<br>&lt;script&gt; |" in block
    assert "<code>f0&#124;`x`.py</code>" in block and "… and 5 more" in block
    assert all(line.count(" | ") == 1 for line in block.splitlines() if line.startswith("| "))


def test_workflow_command_and_gitlab_markers() -> None:
    assert workflow_command("error", "50%\r\nnext", title="a:b,c") == (
        "::error title=a%3Ab%2Cc::50%25%0D%0Anext"
    )
    folds = TurnFolds("gitlab", clock=lambda: 1700000000.5)
    [opened] = folds.start(1)
    assert opened.startswith("\x1b[0Ksection_start:1700000000:oiexec_")
    assert opened.endswith("_turn_1[collapsed=true]\r\x1b[0KTurn 1")
    name = opened.split(":")[2].removesuffix("[collapsed=true]\r\x1b[0KTurn 1")
    closed, reopened = folds.start(2)
    assert closed == f"\x1b[0Ksection_end:1700000000:{name}\r\x1b[0K"
    assert "_turn_2[" in reopened and folds.end() and folds.end() == []
