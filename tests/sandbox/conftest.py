"""Shared fixtures: run `interpreter sandbox` as an unprivileged user against real dirs.

As root, commands run as `nobody` through `setpriv`; as any other user they run as that user.
The Python running the tests must be executable by that user (as root: `chmod o+x /root`
when Python lives under /root).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import oiexec

REPO_ROOT = Path(oiexec.__file__).resolve().parent.parent
PYTHON = os.path.realpath(sys.executable)
NOBODY = 65534
BACKENDS = ("bwrap", "landlock")
SANDBOXED_MODES = ("read-only", "workspace-write")


def unprivileged_ids() -> tuple[int, int]:
    if os.geteuid() == 0:
        return NOBODY, NOBODY
    return os.geteuid(), os.getegid()


def as_user(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    uid, gid = unprivileged_ids()
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", *argv]


@pytest.fixture(scope="session", autouse=True)
def _unprivileged_can_run_python() -> None:
    """As root, commands run as `nobody`, which must be able to reach this Python and the
    checkout (pyenv lives under /root, mode 700 on a fresh machine). Only the search (x)
    bit is added to directories on the way; nothing becomes readable that was not."""
    if os.geteuid() != 0:
        return
    for target in (Path(PYTHON), REPO_ROOT):
        for directory in reversed(target.parents):
            mode = directory.stat().st_mode
            if not mode & 0o001:
                directory.chmod(mode | 0o001)


def _chown_tree(path: Path) -> None:
    uid, gid = unprivileged_ids()
    for dirpath, dirnames, filenames in os.walk(path):
        for name in (dirpath, *(os.path.join(dirpath, n) for n in (*dirnames, *filenames))):
            os.lchown(name, uid, gid)


@dataclass
class Box:
    """A workspace (a git repo) under /tmp and a directory outside every writable root."""

    root: Path
    ws: Path
    outside: Path
    extra_env: dict[str, str] = field(default_factory=dict)

    def env(self, backend: str | None, **extra: str) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.root),
            "PYTHONPATH": str(REPO_ROOT),
            "LANG": "C.UTF-8",
            **self.extra_env,
            **extra,
        }
        if backend:
            env["OI_SANDBOX_BACKEND"] = backend
        return env

    def cli(
        self,
        args: list[str],
        *,
        backend: str | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 60,
    ) -> subprocess.CompletedProcess[str]:
        argv = as_user([PYTHON, "-m", "oiexec.cli.sandbox_cmd", *args])
        return subprocess.run(
            argv,
            cwd=self.ws,
            env={**self.env(backend), **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def run(
        self, mode: str, script: str, *, backend: str, extra: list[str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        args = ["-s", mode, "-C", str(self.ws), *(extra or []), "--", "/bin/sh", "-c", script]
        return self.cli(args, backend=backend)


@pytest.fixture
def box() -> Iterator[Box]:
    tag = uuid.uuid4().hex[:10]
    root = Path(f"/tmp/oi-sbx-{tag}")
    outside = Path(f"/var/tmp/oi-sbx-out-{tag}")
    ws = root / "ws"
    ws.mkdir(parents=True)
    outside.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (ws / "README").write_text("hello\n")
    for path in (root, outside):
        _chown_tree(path)
    try:
        yield Box(root=root, ws=ws, outside=outside)
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(outside, ignore_errors=True)


def snapshot_tree(path: Path) -> dict[str, bytes | None]:
    """Relative path -> content (None for dirs), to compare before/after a command."""
    out: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames:
            out[os.path.relpath(os.path.join(dirpath, name), path)] = None
        for name in filenames:
            full = os.path.join(dirpath, name)
            out[os.path.relpath(full, path)] = Path(full).read_bytes()
    return out


@pytest.fixture
def tcp_listener() -> Iterator[socket.socket]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.settimeout(0.3)
    yield sock
    sock.close()


@pytest.fixture
def udp_listener() -> Iterator[socket.socket]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.3)
    yield sock
    sock.close()
