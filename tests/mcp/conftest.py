"""What the MCP tests share: `-c` flags that configure the test servers, and pid checks."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from oiexec.core import programs

REPO_ROOT = Path(__file__).resolve().parents[2]
MINI = "tests.support.mcp_servers.mini"


@pytest.fixture(autouse=True)
def _programs_judged_as_in_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Servers started in-process are judged as a run in `tmp_path` judges them: the test
    process's own directory (this checkout, whose .venv runs the test servers) is not the
    workspace here. Fresh state per test, so no other test's roots leak in."""
    monkeypatch.setattr(programs, "_STATE", programs._State())
    programs.distrust([tmp_path])


def toml(value: Any) -> str:
    """A `-c` value: JSON is TOML for strings, numbers, booleans and arrays; tables inline."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def server_flags(name: str = "mini", *server_args: str, **keys: Any) -> list[str]:
    """`-c mcp_servers.<name>.*` for the stdio test server (run from the repo root, where
    `python -m tests...` resolves), plus any other keys of that table."""
    values: dict[str, Any] = {
        "command": sys.executable,
        "args": ["-m", MINI, *server_args],
        "cwd": str(REPO_ROOT),
        **keys,
    }
    flags: list[str] = []
    for key, value in values.items():
        flags += ["-c", f"mcp_servers.{name}.{key}={toml(value)}"]
    return flags


def alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie awaiting its reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def gone_soon(pid: int, within: float = 5.0) -> bool:
    """The run has returned; its servers were killed before it did, but the kernel may take
    a moment to reap a killed grandchild (its parent, our test process, is not waiting)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def read_pid(path: Path) -> int:
    return int(path.read_text())


def run_log(home: Path) -> str:
    return "\n".join(p.read_text() for p in sorted((home / "logs").glob("*.log")))


__all__ = [
    "MINI",
    "REPO_ROOT",
    "alive",
    "gone_soon",
    "read_pid",
    "run_log",
    "server_flags",
    "toml",
]
