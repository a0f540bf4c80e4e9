"""The suite's CLI fork server: one preloaded process per test worker that forks each
`run_cli` call's `interpreter` process instead of starting Python afresh.

A fresh `python -m oiexec exec ...` spends ~0.4 CPU-seconds importing click, pydantic, httpx
and the runner before it reads its first flag, and the suite starts well over a thousand of
them. Forked from a process that has imported them, a run starts at once. What a test sees
stays what a fresh process gives it: the child has its own session, its working directory,
exactly the environment the test passed, the test's pipes as its fds 0-2, `sys.argv` as
`python -m oiexec` sets it, and it ends through the interpreter's normal exit (atexit
handlers, thread joins, flushed streams), so its exit status is the one a fresh process
would have. What a fork cannot give (a different interpreter start-up: `PYTHON*` or locale
variables unlike the server's, `-X importtime`) `tests/support/cli_client.py` runs fresh.

Protocol: the client sends one SOCK_SEQPACKET message with four descriptors (stdin, stdout,
stderr, and its end of a request socket). The server forks; the child reads the request
(JSON: argv, cwd, env) from the request socket to its end, and the server writes `pid N` on
it at once and `exit CODE` when the child has been reaped. Single-threaded, so forking is
safe; nothing listens anywhere (a socketpair inherited from the client).
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import select
import signal
import socket
import sys
from typing import Any


def _preload() -> None:
    from oiexec import _entry
    from oiexec.runner.zygote import PRELOAD

    _entry._lean()  # what `main` does before importing the CLI
    for name in ("oiexec.cli", *PRELOAD):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    gc.collect()
    gc.freeze()


class _Child:
    """What a forked child takes with it out of the server's loop."""

    def __init__(self, fds: list[int], close: list[int]) -> None:
        self.fds = fds
        self.close = close


def _serve(control: socket.socket) -> _Child:
    """The server's loop; returns only in a forked child."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda _signum, _frame: None)
    waiting: dict[int, socket.socket] = {}
    while True:
        with contextlib.suppress(InterruptedError):
            ready, _, _ = select.select([control, wake_r], [], [])
        if wake_r in ready:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_r, 4096)
        _reap(waiting)
        if control not in ready:
            continue
        message, fds, _flags, _addr = socket.recv_fds(control, 16, 8)
        if not message:  # the client (the test worker) is gone
            os._exit(0)
        if len(fds) != 4:
            for fd in fds:
                os.close(fd)
            continue
        pid = os.fork()
        if pid == 0:
            inherited = [control.fileno(), wake_r, wake_w] + [s.fileno() for s in waiting.values()]
            return _Child(fds, inherited)
        for fd in fds[:3]:
            os.close(fd)
        reply = socket.socket(fileno=fds[3])
        with contextlib.suppress(OSError):
            reply.sendall(f"pid {pid}\n".encode())
        waiting[pid] = reply


def _reap(waiting: dict[int, socket.socket]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        reply = waiting.pop(pid, None)
        if reply is not None:
            with contextlib.suppress(OSError):
                reply.sendall(f"exit {os.waitstatus_to_exitcode(status)}\n".encode())
            reply.close()


def _become(child: _Child) -> None:
    """In the forked child: become the `python -m oiexec` process the request describes."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for fd in child.close:
        with contextlib.suppress(OSError):
            os.close(fd)
    stdin, stdout, stderr, reply = child.fds
    chunks = []
    while chunk := os.read(reply, 1 << 16):
        chunks.append(chunk)
    os.close(reply)
    request: dict[str, Any] = json.loads(b"".join(chunks))
    os.setsid()
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
        os.dup2(fd, target)
        os.close(fd)
    # `python -m` puts the working directory first on the module path.
    sys.path_importer_cache.pop(sys.path[0], None)
    sys.path[0] = os.getcwd()
    import oiexec
    from oiexec._entry import main

    sys.argv = [os.path.join(os.path.dirname(oiexec.__file__), "__main__.py"), *request["argv"]]

    main()  # SystemExit from here ends the process through the interpreter's normal exit


def main(fd: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the test worker's to handle
    control = socket.socket(fileno=fd)
    _preload()
    _become(_serve(control))


if __name__ == "__main__":
    main(int(sys.argv[1]))
