"""Helpers shared by the containment, tripwire and limits suites."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.sandbox.conftest import Box
from tests.support.model_server import ModelServer


def alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie waiting for init to reap it is dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat.rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")


def wait_dead(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def run_exec(
    box: Box,
    server: ModelServer,
    mode: str,
    backend: str,
    extra: list[str] | None = None,
    timeout: float = 120,
) -> dict[str, Any]:
    """`interpreter exec --json` as the box's user, against the scripted model: its exit
    code, its events and its stderr."""
    proc = box.exec(server.config_args(), mode, backend, *(extra or []), timeout=timeout)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return {"code": proc.returncode, "events": events, "stderr": proc.stderr}


def commit_all(ws: Path) -> str:
    """Commit the workspace (as whoever owns it) and return the commit id."""
    git = ["git", "-C", str(ws), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    owner = ws.stat().st_uid
    who = [f"--reuid={owner}", f"--regid={owner}", "--clear-groups"]
    prefix = [] if owner == os.geteuid() else ["setpriv", *who]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(ws.parent)}
    for args in (["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run([*prefix, *git, *args], check=True, env=env)
    done = subprocess.run(
        [*prefix, *git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True, env=env
    )
    return done.stdout.strip()
