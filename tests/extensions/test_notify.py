"""`notify`: run once after a completed turn with Codex's payload as the last argument; a
failing notifier is a warning and never changes the exit code."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.conftest import exec_args, run_cli
from tests.support.model_server import ModelServer, reply

WRITER = "import sys\nopen(sys.argv[1], 'a').write(sys.argv[-1] + '\\n')\n"


def _notify_args(tmp_path: Path, out: Path) -> list[str]:
    script = tmp_path / "notify.py"
    script.write_text(WRITER)
    return ["-c", f"notify={json.dumps([sys.executable, str(script), str(out)])}"]


def test_notify_receives_codex_payload(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "notified.jsonl"
    model_server.enqueue(reply("All tests pass."))
    result = run_cli(
        [*exec_args(model_server), *_notify_args(tmp_path, out), "run the tests"], cwd=repo
    )
    assert result.returncode == 0, result.stderr
    lines = out.read_text().splitlines()
    assert len(lines) == 1
    payload = json.loads(lines[0])
    assert payload == {
        "type": "agent-turn-complete",
        "thread-id": result.events[0]["thread_id"],
        "turn-id": payload["turn-id"],
        "cwd": str(repo),
        "input-messages": ["run the tests"],
        "last-assistant-message": "All tests pass.",
    }
    assert payload["turn-id"]


def test_a_failing_notify_is_a_warning_not_a_failure(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(reply("ok"), reply("ok"))
    failing = run_cli(
        [*exec_args(model_server), "-c", 'notify=["sh","-c","exit 3"]', "go"], cwd=repo
    )
    assert failing.returncode == 0, failing.stderr
    assert "notify command `sh` exited with status 3" in failing.stderr
    missing = run_cli(
        [*exec_args(model_server), "-c", 'notify=["/nonexistent/notifier"]', "go"], cwd=repo
    )
    assert missing.returncode == 0, missing.stderr
    assert "notify command `/nonexistent/notifier` could not start" in missing.stderr


def test_notify_does_not_run_after_a_failed_turn(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "notified.jsonl"
    model_server.enqueue(reply("done"))
    result = run_cli(
        [
            *exec_args(model_server),
            *_notify_args(tmp_path, out),
            "--check",
            "false",
            "--max-attempts",
            "1",
            "go",
        ],
        cwd=repo,
    )
    assert result.returncode == 8, result.stderr
    assert not out.exists()
