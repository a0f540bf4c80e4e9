"""A run killed with SIGKILL mid-turn resumes cleanly: nothing is replayed twice, every call
the history holds has its output, and the rollout stays one continuous record."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from oiexec.session.repair import KILLED_OUTPUT
from tests.conftest import exec_args, run_cli
from tests.support.model_server import (
    ModelServer,
    call,
    reply,
    stall,
    tool_outputs,
    user_texts,
)


def _kill_when(args: list[str], cwd: Path, ready: Callable[[], bool]) -> None:
    """Starts the CLI, waits until `ready()`, then SIGKILLs it: no cleanup code runs."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "oiexec", *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while not ready():
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, "the run never reached the kill point"
            time.sleep(0.05)
        time.sleep(0.2)  # let it record what it does at that point
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


def _pid(pid_file: Path) -> int:
    """The pid the command wrote, or 0 while the file is missing or still being written."""
    try:
        text = pid_file.read_text().strip()
    except FileNotFoundError:
        return 0
    return int(text) if text.isdigit() else 0


def _rollout(home: Path) -> Path:
    [path] = (home / "sessions").rglob("rollout-*.jsonl")
    return path


def _thread_id(path: Path) -> str:
    return str(json.loads(path.read_text().splitlines()[0])["payload"]["id"])


def _call_ids(body: dict[str, Any]) -> list[str]:
    return [
        item["call_id"]
        for item in body.get("input") or []
        if item.get("type") in ("function_call", "custom_tool_call")
    ]


def _assert_continuous(path: Path) -> None:
    ordinals = [json.loads(line)["ordinal"] for line in path.read_text().splitlines()]
    assert ordinals == list(range(len(ordinals)))


def _status(home: Path, repo: Path) -> str:
    listed = run_cli(["sessions", "list", "--json"], cwd=repo)
    assert listed.returncode == 0, listed.stderr
    [row] = json.loads(listed.stdout)["sessions"]
    return str(row["status"])


def test_killed_while_the_model_streams(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    model_server.enqueue(stall(30), reply("picked up"))
    _kill_when(
        [*exec_args(model_server), "first task"], repo, lambda: len(model_server.bodies) == 1
    )
    path = _rollout(oi_home)
    assert _status(oi_home, repo) == "incomplete"

    resumed = run_cli(
        [*exec_args(model_server), "resume", _thread_id(path), "second task"], cwd=repo
    )
    assert resumed.returncode == 0, resumed.stderr
    texts = user_texts(model_server.bodies[-1])
    assert texts.count("first task") == 1 and texts.count("second task") == 1
    assert texts.index("first task") < texts.index("second task")
    _assert_continuous(path)
    assert _status(oi_home, repo) == "completed"


def test_killed_while_a_command_runs(
    model_server: ModelServer, repo: Path, oi_home: Path, tmp_path: Path
) -> None:
    pid_file = tmp_path / "sleep.pid"
    command = f"echo $$ > {pid_file}; exec sleep 30"
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": "echo before"})]),
        reply(tool_calls=[call("exec_command", {"cmd": command, "yield_time_ms": 30000})]),
        reply("picked up"),
    )
    try:
        _kill_when([*exec_args(model_server), "first task"], repo, lambda: _pid(pid_file) > 0)
    finally:
        # The command usually dies with the runner (its process group is reaped); end it here
        # in case it outlived it, and don't fail if it is already gone.
        if (pid := _pid(pid_file)) > 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    path = _rollout(oi_home)

    resumed = run_cli(
        [*exec_args(model_server), "resume", _thread_id(path), "second task"], cwd=repo
    )
    assert resumed.returncode == 0, resumed.stderr
    body = model_server.bodies[-1]
    texts = user_texts(body)
    assert texts.count("first task") == 1 and texts.count("second task") == 1
    calls, outputs = _call_ids(body), tool_outputs(body)
    assert len(calls) == 2 and set(calls) == set(outputs)
    # The finished call keeps its real output; the killed one is closed, not re-run.
    assert "before" in outputs[calls[0]]
    assert outputs[calls[1]] == KILLED_OUTPUT
    assert "last run was killed before it finished; 1 unfinished tool call(s) closed" in (
        resumed.stderr
    )
    assert [i["command"] for i in resumed.items("command_execution")] == []
    _assert_continuous(path)
