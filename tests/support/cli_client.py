"""Runs the real `interpreter` CLI (`python -m oiexec`, or another of its modules) for a
test: forked from one of the worker's CLI fork servers (`cli_server.py`), each started with
one set of start-up variables (`PYTHON*`, `LC_*`, `LANG`: they act while Python starts, so
calls that differ in them never share a server), when that set is shared (`share_startup`);
fresh otherwise, and every call fresh with TESTS_CLI_FRESH=1, to compare.

Either way the caller gets what `subprocess.run(..., capture_output=True, timeout=...)`
gives: the exit status (negative for a signal), both streams read to their end, and
`subprocess.TimeoutExpired` after the process group was killed when the deadline passed.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

#: Variables read while Python starts (or while the locale is set up): a fork inherits the
#: server's start-up, so a request whose values differ from the server's starts fresh.
_STARTUP_PREFIXES = ("PYTHON", "LC_", "LANG")

_BOOT = (
    "import json, sys; sys.path.insert(0, sys.argv[1]); "
    "from tests.support import cli_server; "
    "sys.path.remove(sys.argv[1]); cli_server.main(int(sys.argv[2]))"
)


def _startup_vars(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(_STARTUP_PREFIXES)}


def _startup_key(env: dict[str, str]) -> frozenset[tuple[str, str]]:
    """Which fork server serves a call with `env`."""
    return frozenset(_startup_vars(env).items())


class _Server:
    def __init__(self, env: dict[str, str]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _BOOT, str(REPO_ROOT), str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            cwd=REPO_ROOT,
            # Only what acts at start-up: a child's environment is the call's (os.environ),
            # but its initial block (/proc/PID/environ) is the server's, which must carry
            # no test's key.
            env={**_startup_vars(env), "PATH": env.get("PATH", os.defpath)},
        )
        theirs.close()
        self.control = ours
        self.lock = threading.Lock()

    def close(self) -> None:
        """The worker is done: the server exits when its end of the socket closes."""
        self.control.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


#: One server per set of start-up variables in use (the suite's own; the sandbox boxes').
_servers: dict[frozenset[tuple[str, str]], _Server] = {}
_servers_lock = threading.Lock()


@atexit.register
def _close_servers() -> None:
    for server in _servers.values():
        server.close()


#: The start-up variables a forked call may have: the worker's own, and those a conftest
#: declares for its CLI calls (`share_startup`). A call with others (a planted PYTHONPATH, an
#: import profile) starts fresh: its start-up is what it tests.
_SHARED = {_startup_key(dict(os.environ))}


def share_startup(env: dict[str, str]) -> None:
    """Lets calls whose start-up variables are exactly `env`'s share a fork server."""
    _SHARED.add(_startup_key(env))


def _fork_server(key: frozenset[tuple[str, str]], env: dict[str, str]) -> _Server:
    with _servers_lock:
        server = _servers.get(key)
        if server is None or server.proc.poll() is not None:
            server = _servers[key] = _Server(env)
        return server


def parents() -> set[int]:
    """The processes whose children are this worker's CLI processes: the worker itself (a
    fresh call) and its fork servers (a forked one)."""
    return {os.getpid()} | {s.proc.pid for s in _servers.values() if s.proc.poll() is None}


def run(
    argv: list[str],
    *,
    cwd: Path,
    data: bytes | None,
    env: dict[str, str],
    timeout: float,
    module: str = "oiexec",
    user: tuple[int, int] | None = None,
    fresh: bool = False,
) -> tuple[int, bytes, bytes]:
    """(exit status, stdout, stderr) of `python -m MODULE *argv` in `cwd` with exactly
    `env`, as `user` (uid, gid; with no supplementary groups) when given; in a process
    started afresh with `fresh` (a test of what the process image holds: a forked child's
    `/proc/PID/environ` and `cmdline` are its server's)."""
    key = _startup_key(env)
    if key in _SHARED and not fresh and os.environ.get("TESTS_CLI_FRESH") != "1":
        request: dict[str, object] = {"module": module, "argv": list(argv), "cwd": str(cwd)}
        request |= {"env": env, "user": list(user) if user is not None else None}
        return _forked(_fork_server(key, env), request, data=data, timeout=timeout)
    prefix = []
    if user is not None:
        prefix = ["setpriv", f"--reuid={user[0]}", f"--regid={user[1]}", "--clear-groups"]
    proc = subprocess.run(
        [*prefix, sys.executable, "-m", module, *argv],
        cwd=cwd,
        input=data,
        stdin=None if data is not None else subprocess.DEVNULL,
        capture_output=True,
        env=env,
        timeout=timeout,
    )
    return proc.returncode, proc.stdout, proc.stderr


def _forked(
    server: _Server, request: dict[str, object], *, data: bytes | None, timeout: float
) -> tuple[int, bytes, bytes]:
    deadline = time.monotonic() + timeout
    ours, theirs = socket.socketpair()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    if data is None:
        in_r, in_w = os.open(os.devnull, os.O_RDONLY), -1
    else:
        in_r, in_w = os.pipe()
    try:
        with server.lock:
            socket.send_fds(server.control, [b"run"], [in_r, out_w, err_w, theirs.fileno()])
    finally:
        for fd in (in_r, out_w, err_w):
            os.close(fd)
        theirs.close()
    ours.sendall(json.dumps(request).encode())
    ours.shutdown(socket.SHUT_WR)
    argv = [sys.executable, "-m", str(request["module"]), *request["argv"]]  # type: ignore[misc]
    return _collect(ours, in_w, data or b"", out_r, err_r, deadline, argv, timeout)


def _collect(
    reply: socket.socket,
    in_w: int,
    data: bytes,
    out_r: int,
    err_r: int,
    deadline: float,
    argv: list[str],
    timeout: float,
) -> tuple[int, bytes, bytes]:
    """Feeds stdin, reads both streams to their end and the server's `pid`/`exit` lines."""
    out, err, said = bytearray(), bytearray(), bytearray()
    sel = selectors.DefaultSelector()
    sel.register(out_r, selectors.EVENT_READ, out)
    sel.register(err_r, selectors.EVENT_READ, err)
    sel.register(reply, selectors.EVENT_READ, said)
    if in_w >= 0:
        os.set_blocking(in_w, False)
        sel.register(in_w, selectors.EVENT_WRITE)
    pending = memoryview(data)
    pid: int | None = None
    try:
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                if pid is not None:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(pid, signal.SIGKILL)
                raise subprocess.TimeoutExpired(argv, timeout, bytes(out), bytes(err))
            for key, _ in sel.select(left):
                if key.fd == in_w:
                    try:
                        pending = pending[os.write(in_w, pending[: 1 << 16]) :]
                    except BrokenPipeError:
                        pending = pending[:0]
                    if not pending:
                        sel.unregister(in_w)
                        os.close(in_w)
                        in_w = -1
                    continue
                chunk = os.read(key.fd, 1 << 16) if key.fd != reply.fileno() else reply.recv(4096)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                key.data.extend(chunk)
                if key.data is said and pid is None and b"\n" in said:
                    pid = int(said.split(b"\n", 1)[0].split()[1])
    finally:
        sel.close()
        for fd in (out_r, err_r, in_w):
            if fd >= 0:
                os.close(fd)
        reply.close()
    lines = said.decode().split()
    if "exit" not in lines:
        raise RuntimeError(f"the CLI fork server did not report an exit: {said!r}")
    return int(lines[lines.index("exit") + 1]), bytes(out), bytes(err)
