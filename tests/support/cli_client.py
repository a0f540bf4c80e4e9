"""Runs the real `interpreter` CLI for a test: forked from the worker's CLI fork server
(`cli_server.py`) when a fork gives what a fresh `python -m oiexec` would, started fresh
otherwise (or everywhere with TESTS_CLI_FRESH=1, to compare).

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


class _Server:
    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.env = dict(os.environ)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _BOOT, str(REPO_ROOT), str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            cwd=REPO_ROOT,
            env=self.env,
        )
        theirs.close()
        self.control = ours
        self.lock = threading.Lock()

    def fits(self, env: dict[str, str]) -> bool:
        return self.proc.poll() is None and _startup_vars(env) == _startup_vars(self.env)

    def close(self) -> None:
        """The worker is done: the server exits when its end of the socket closes."""
        self.control.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_server: _Server | None = None
_server_lock = threading.Lock()


@atexit.register
def _close_server() -> None:
    if _server is not None:
        _server.close()


def _fork_server() -> _Server:
    global _server
    with _server_lock:
        if _server is None or _server.proc.poll() is not None:
            _server = _Server()
        return _server


def parents() -> set[int]:
    """The processes whose children are this worker's CLI processes: the worker itself (a
    fresh call) and its fork server (a forked one)."""
    found = {os.getpid()}
    if _server is not None and _server.proc.poll() is None:
        found.add(_server.proc.pid)
    return found


def run(
    argv: list[str],
    *,
    cwd: Path,
    data: bytes | None,
    env: dict[str, str],
    timeout: float,
) -> tuple[int, bytes, bytes]:
    """(exit status, stdout, stderr) of `python -m oiexec *argv`."""
    if os.environ.get("TESTS_CLI_FRESH") != "1":
        server = _fork_server()
        if server.fits(env):
            return _forked(server, argv, cwd=cwd, data=data, env=env, timeout=timeout)
    proc = subprocess.run(
        [sys.executable, "-m", "oiexec", *argv],
        cwd=cwd,
        input=data,
        stdin=None if data is not None else subprocess.DEVNULL,
        capture_output=True,
        env=env,
        timeout=timeout,
    )
    return proc.returncode, proc.stdout, proc.stderr


def _forked(
    server: _Server,
    argv: list[str],
    *,
    cwd: Path,
    data: bytes | None,
    env: dict[str, str],
    timeout: float,
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
    request = json.dumps({"argv": list(argv), "cwd": str(cwd), "env": env}).encode()
    ours.sendall(request)
    ours.shutdown(socket.SHUT_WR)
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
                raise subprocess.TimeoutExpired(
                    [sys.executable, "-m", "oiexec", *argv], timeout, bytes(out), bytes(err)
                )
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
