"""Shared fixtures: run `interpreter sandbox` and `interpreter exec` against real dirs, as
root (the CI-container case) and as an unprivileged user.

Run as root, every `box` test runs twice: once as root itself and once as `nobody` (through
`setpriv`); run as anyone else, once as that user. The Python running the tests must be
executable by `nobody` (as root, the search bit is added to the directories on its way).
Backends are chosen the way users choose them (`--backend`, `-c sandbox_backend=`); the
simulated host failures need `OIEXEC_SANDBOX_TEST_HOOKS=1`, which `Box.env` sets.
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
from oiexec.catalog.cache import CACHE_FILE as CATALOG_MEMO
from tests.support import cli_client

REPO_ROOT = Path(oiexec.__file__).resolve().parent.parent
#: Runs the runner. Not realpath'd: in a virtualenv, bin/python is a link whose target lacks
#: the venv's packages.
RUNNER_PYTHON = os.path.abspath(sys.executable)
#: Runs probes *inside* the sandbox (standard library only): the base interpreter, since a
#: checkout and its virtualenv under /tmp are hidden by bwrap's private /tmp.
PYTHON = os.path.realpath(sys.executable)
NOBODY = 65534
BACKENDS = ("bwrap", "landlock")
SANDBOXED_MODES = ("read-only", "workspace-write")
IS_ROOT = os.geteuid() == 0
#: Who runs the runner: root and nobody when the suite runs as root, else the current user.
USERS = ("root", "nobody") if IS_ROOT else ("user",)
TEST_HOOKS = {"OIEXEC_SANDBOX_TEST_HOOKS": "1"}
#: The start-up variables of every box's runner (`Box.env`): its calls share a fork server.
_BOX_STARTUP = {"PYTHONPATH": str(REPO_ROOT), "LANG": "C.UTF-8"}
cli_client.share_startup(_BOX_STARTUP)


def unprivileged_ids() -> tuple[int, int]:
    if IS_ROOT:
        return NOBODY, NOBODY
    return os.geteuid(), os.getegid()


def as_user(argv: list[str], who: str = "nobody") -> list[str]:
    """`argv` run as `who`: "root" (only when the suite is root) runs it unchanged."""
    if not IS_ROOT or who == "root":
        return argv
    uid, gid = unprivileged_ids()
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", *argv]


def backend_args(backend: str | None) -> list[str]:
    """`interpreter sandbox` flags choosing `backend` as a user would. Landlock also needs
    `--require any`, since a root runner refuses the degraded backend by default."""
    if backend is None:
        return []
    return ["--backend", backend, *(["--require", "any"] if backend == "landlock" else [])]


def exec_backend_args(backend: str | None) -> list[str]:
    """The same choice for `interpreter exec` (`-c` overrides)."""
    if backend is None:
        return []
    args = ["-c", f"sandbox_backend={backend}"]
    return args + (["-c", "sandbox_require=any"] if backend == "landlock" else [])


@pytest.fixture(scope="session", autouse=True)
def _unprivileged_can_run_python() -> None:
    """As root, commands run as `nobody`, which must be able to reach this Python and the
    checkout (pyenv lives under /root, mode 700 on a fresh machine). Only the search (x)
    bit is added to directories on the way; nothing becomes readable that was not."""
    if os.geteuid() != 0:
        return
    for target in (Path(RUNNER_PYTHON), Path(PYTHON), REPO_ROOT):
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
    #: "root", "nobody" or "user": who runs the runner (see `USERS`).
    who: str = "nobody"
    extra_env: dict[str, str] = field(default_factory=dict)

    def env(self, backend: str | None = None, **extra: str) -> dict[str, str]:
        """The runner's environment. `backend` is accepted for old call sites and ignored:
        the backend is chosen with flags (`backend_args`, `exec_backend_args`)."""
        del backend
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.root),
            **_BOX_STARTUP,
            **TEST_HOOKS,
            **self.extra_env,
            **extra,
        }

    def as_me(self, argv: list[str]) -> list[str]:
        """`argv` as this box's runner user."""
        return as_user(argv, self.who)

    def visible(self, script: Path) -> Path:
        """A copy of `script` that commands can read whatever the sandbox hides (the
        checkout may lie under /tmp, which bwrap makes private): in `outside`."""
        copy = self.outside / script.name
        copy.write_bytes(script.read_bytes())
        copy.chmod(0o644)
        return copy

    def cli(
        self,
        args: list[str],
        *,
        backend: str | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 60,
        fresh: bool = False,
    ) -> subprocess.CompletedProcess[str]:
        if args and args[0] == "doctor":
            args = ["doctor", *backend_args(backend), *args[1:]]
        else:
            args = [*backend_args(backend), *args]
        return self._runner(
            "oiexec.cli.sandbox_cmd",
            args,
            env={**self.env(), **(env or {})},
            timeout=timeout,
            fresh=fresh,
        )

    def _runner(
        self,
        module: str,
        args: list[str],
        *,
        env: dict[str, str],
        timeout: float,
        fresh: bool = False,
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """`python -m MODULE *args` in `cwd` (the workspace by default) as this box's user,
        stdin closed: forked from the worker's CLI fork server (tests/support/cli_client.py),
        as `as_me` would start it."""
        code, out, err = cli_client.run(
            args, cwd=cwd or self.ws, data=None, env=env, timeout=timeout, module=module,
            user=None if not IS_ROOT or self.who == "root" else unprivileged_ids(), fresh=fresh,
        )  # fmt: skip
        argv = self.as_me([RUNNER_PYTHON, "-m", module, *args])
        return subprocess.CompletedProcess(argv, code, out.decode(), err.decode())

    def exec(
        self,
        provider_args: list[str],
        mode: str,
        backend: str | None,
        *extra: str,
        env: dict[str, str] | None = None,
        timeout: float = 120,
        fresh: bool = False,
    ) -> subprocess.CompletedProcess[str]:
        """`interpreter exec --json` in the workspace, as this box's user; `provider_args`
        are the scripted model's `config_args()`; `fresh`: in a process started afresh (see
        `cli_client.run`)."""
        args = ["exec", "--json", "-s", mode, *exec_backend_args(backend), *provider_args,
                *extra, "go"]  # fmt: skip
        return self.interpreter(args, env=env, timeout=timeout, fresh=fresh)

    def interpreter(
        self,
        args: list[str],
        *,
        env: dict[str, str] | None = None,
        timeout: float = 120,
        fresh: bool = False,
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """`interpreter *args` in `cwd` (the workspace by default) as this box's user, with
        the box's home as OPENINTERPRETER_HOME, stdin closed (forked from the CLI fork
        server, see `_runner`)."""
        self._remember_catalog_answer()
        return self._runner(
            "oiexec",
            args,
            env=self.env(OPENINTERPRETER_HOME=str(self.root / "home"), **(env or {})),
            timeout=timeout,
            fresh=fresh,
            cwd=cwd,
        )

    def _remember_catalog_answer(self) -> None:
        """The box's home gets the model catalog's answers the test's home has (the
        `model_server` fixture remembers its server's there), as a user's earlier run that
        day would have left them: without them every run in a box started the catalog probe
        (~0.3 CPU-s). Loading the catalog is tested in tests/config/test_catalog*.py."""
        source = Path(os.environ.get("OPENINTERPRETER_HOME", "/nonexistent")) / CATALOG_MEMO
        home = self.root / "home"
        target = home / CATALOG_MEMO
        if target.exists() or not source.is_file():
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        if self.who != "root":
            _chown_tree(home)

    def run(
        self, mode: str, script: str, *, backend: str, extra: list[str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        args = ["-s", mode, "-C", str(self.ws), *(extra or []), "--", "/bin/sh", "-c", script]
        return self.cli(args, backend=backend)


@pytest.fixture(params=USERS)
def box(request: pytest.FixtureRequest) -> Iterator[Box]:
    """A fresh box, once per runner user (root and nobody when the suite runs as root)."""
    tag = uuid.uuid4().hex[:10]
    root = Path(f"/tmp/oi-sbx-{tag}")
    outside = Path(f"/var/tmp/oi-sbx-out-{tag}")
    ws = root / "ws"
    ws.mkdir(parents=True)
    outside.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (ws / "README").write_text("hello\n")
    if request.param != "root":
        for path in (root, outside):
            _chown_tree(path)
    try:
        yield Box(root=root, ws=ws, outside=outside, who=request.param)
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
