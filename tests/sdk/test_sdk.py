"""The real @openai/codex-sdk (from the npm registry) drives `interpreter` as its binary."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIX_PATCH, FIXED_CALC
from tests.support.model_server import ModelServer, apply_patch_call, call, reply, usage

SDK_DIR = Path(__file__).parent
API_KEY = "sk-test-sdk-0123456789abcdef"


@pytest.fixture(scope="session")
def sdk_installed() -> Path:
    """Installs the pinned SDK once (a file lock keeps parallel workers from racing), without
    its optional dependencies: those are Codex's own binaries (400 MB for linux-x64, most of a
    fresh clone's install time), which the SDK never starts here (`codexPathOverride` names
    `interpreter`). `bench/run.py` says how to add them for its side-by-side figures."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.fail("node and npm are required for the Codex SDK test (.ci/run installs them)")
    with open(SDK_DIR / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (SDK_DIR / "node_modules" / "@openai" / "codex-sdk").is_dir():
            subprocess.run(
                ["npm", "install", "--omit=optional", "--no-audit", "--no-fund", "-q"],
                cwd=SDK_DIR,
                check=True,
                timeout=600,
            )
    return SDK_DIR


@pytest.fixture
def binary(tmp_path: Path) -> Path:
    """What an app passes as `codexPathOverride`: an `interpreter` executable."""
    path = tmp_path / "bin" / "interpreter"
    path.parent.mkdir()
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m oiexec "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def _drive(
    sdk: Path, binary: Path, server: ModelServer, cwd: Path, prompts: list[str], **extra: Any
) -> list[dict[str, Any]]:
    payload = {
        "binary": str(binary),
        "baseUrl": server.base_url,
        "apiKey": API_KEY,
        "cwd": str(cwd),
        "prompts": prompts,
        **extra,
    }
    proc = subprocess.run(
        ["node", str(sdk / "drive.mjs"), json.dumps(payload)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ},
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def test_sdk_runs_resumes_and_reads_usage(
    sdk_installed: Path, binary: Path, model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    model_server.enqueue(
        reply(
            tool_calls=[call("exec_command", {"cmd": "python -m unittest -q"})],
            usage=usage(input_tokens=100, output_tokens=10),
        ),
        reply(
            tool_calls=[apply_patch_call(FIX_PATCH)],
            usage=usage(input_tokens=120, output_tokens=10),
        ),
        reply("fixed", usage=usage(input_tokens=130, output_tokens=5)),
        reply("still fixed", usage=usage(input_tokens=300, output_tokens=7)),
    )
    turns = _drive(
        sdk_installed, binary, model_server, repo, ["fix the failing test", "is it fixed?"]
    )
    assert "error" not in turns[0], turns[0]
    first, second = turns
    assert first["finalResponse"] == "fixed"
    assert (repo / "calc.py").read_text() == FIXED_CALC
    kinds = [item["type"] for item in first["items"]]
    assert kinds == ["command_execution", "file_change", "agent_message"]
    assert first["usage"]["input_tokens"] == 350 and first["usage"]["output_tokens"] == 25
    # Turn 2 resumes the same thread: same id, history carried over, usage cumulative.
    assert second["threadId"] == first["threadId"]
    assert second["finalResponse"] == "still fixed"
    assert second["usage"]["input_tokens"] == 650
    last_body = json.dumps(model_server.bodies[-1]["input"])
    assert "fix the failing test" in last_body and "is it fixed?" in last_body
    # The SDK sends its key as CODEX_API_KEY; it reaches the provider but no file.
    assert model_server.requests[-1].headers.get("authorization") == f"Bearer {API_KEY}"
    # The SDK names itself in CODEX_INTERNAL_ORIGINATOR_OVERRIDE; every request says so.
    assert {r.headers.get("originator") for r in model_server.model_requests} == {"codex_sdk_ts"}
    for rollout in (oi_home / "sessions").rglob("*.jsonl"):
        assert API_KEY not in rollout.read_text()


def test_sdk_surfaces_a_failed_turn(
    sdk_installed: Path, binary: Path, model_server: ModelServer, repo: Path
) -> None:
    from tests.support.model_server import fault

    model_server.enqueue(*[fault(status=400, message="bad request: model not found")] * 3)
    turns = _drive(sdk_installed, binary, model_server, repo, ["hello"])
    assert "model not found" in turns[0]["error"]


def test_sdk_resume_thread_from_a_new_client(
    sdk_installed: Path, binary: Path, model_server: ModelServer, repo: Path
) -> None:
    model_server.enqueue(reply("one"), reply("two"))
    turns = _drive(
        sdk_installed, binary, model_server, repo, ["first", "second"], resumeWithNewClient=True
    )
    assert [t["finalResponse"] for t in turns] == ["one", "two"]
    assert turns[0]["threadId"] == turns[1]["threadId"]
    assert "first" in json.dumps(model_server.bodies[-1]["input"])
