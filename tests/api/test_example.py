"""`examples/python/batch_tasks.py` end to end: the script as a user runs it, three tasks at
once against the scripted model server, configured through the user config."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import FIX_PATCH, FIXED_CALC, git
from tests.support.model_server import ModelServer, apply_patch_call, call, reply

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "python" / "batch_tasks.py"


def _clone(repo: Path, path: Path) -> Path:
    git(repo.parent, "clone", "-q", str(repo), str(path))
    return path


def test_the_batch_example_runs_tasks_concurrently_and_writes_a_summary(
    model_server: ModelServer, repo: Path, tmp_path: Path, oi_home: Path
) -> None:
    (oi_home / "config.toml").write_text(
        'model_provider = "scripted"\n'
        "[model_providers.scripted]\n"
        'name = "Scripted"\n'
        f'base_url = "{model_server.base_url}"\n'
        'wire_api = "responses"\n'
    )
    second = _clone(repo, tmp_path / "second")
    model_server.route(
        "TASK-FIX",
        reply(tool_calls=[apply_patch_call(FIX_PATCH)]),
        reply("Fixed add()."),
    )
    model_server.route("TASK-ASK", reply("calc.py has one function."))
    model_server.route(
        "TASK-LOOP",
        *(reply(tool_calls=[call("exec_command", {"cmd": "true"})]) for _ in range(2)),
    )
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        "\n".join(
            json.dumps(task)
            for task in (
                {
                    "id": "fix",
                    "prompt": "TASK-FIX: fix the failing test",
                    "cwd": str(repo),
                    "check": "python -m unittest -q",
                },
                {"id": "ask", "prompt": "TASK-ASK: what is in calc.py?", "cwd": str(second)},
                {"id": "loop", "prompt": "TASK-LOOP", "cwd": str(second), "max_turns": 2},
            )
        )
        + "\n"
    )
    out = tmp_path / "out" / "summary.json"

    proc = subprocess.run(
        [sys.executable, str(EXAMPLE), str(tasks), "--out", str(out), "--jobs", "3"],
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert proc.returncode == 1, proc.stderr  # one task hit its limit
    summary = {entry["id"]: entry for entry in json.loads(out.read_text())}
    assert summary["fix"]["ok"] and summary["fix"]["changed_files"] == ["calc.py"]
    assert (repo / "calc.py").read_text() == FIXED_CALC
    assert summary["ask"]["final_response"] == "calc.py has one function."
    assert summary["ask"]["changed_files"] == []
    assert summary["loop"]["exit_code"] == 4 and "turn limit" in summary["loop"]["reason"]
    assert all(entry.get("thread_id") for entry in summary.values())
    assert proc.stdout.splitlines()[0].split() == ["fix", "ok"]
    assert proc.stderr == ""


def test_the_batch_example_refuses_zero_jobs_instead_of_waiting_forever(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "a", "prompt": "x", "cwd": str(tmp_path)}) + "\n")
    proc = subprocess.run(
        [
            sys.executable,
            str(EXAMPLE),
            str(tasks),
            "--out",
            str(tmp_path / "s.json"),
            "--jobs",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "--jobs: expected a whole number of at least 1, got '0'" in proc.stderr


def test_every_python_example_is_run_here() -> None:
    from tests.examples.sources import PYTHON_SCRIPTS

    assert PYTHON_SCRIPTS == [EXAMPLE], "a new examples/python script needs its end-to-end test"
