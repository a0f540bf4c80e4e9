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
(JSON: module, argv, cwd, env, and the user to become) from the request socket to its end,
and the server writes `pid N` on it at once and `exit CODE` when the child has been reaped.
Single-threaded, so forking is safe; nothing listens anywhere (a socketpair inherited from
the client).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import json
import os
import runpy
import select
import signal
import socket
import sys
from typing import Any

_PR_SET_DUMPABLE = 4


#: What a run with MCP servers configured imports (the SDK's client side and its protocol
#: types, ~0.8 CPU-s): many tests configure the test servers, and each of their runs would
#: pay it afresh. Test-only: a user's run imports these only when it has servers.
_MCP_CLIENT = (
    "oiexec.mcp.manager",
    "oiexec.mcp.approval",
    "oiexec.mcp.naming",
    "oiexec.mcp.resources",
    "oiexec.mcp.tools",
    "oiexec.mcp.sdk",
    "anyio",
    "mcp_types",
    "mcp.client.session",
    "mcp.client.stdio",
    "mcp.client.streamable_http",
    "mcp.shared.exceptions",
)


def _preload() -> None:
    from oiexec import _entry
    from oiexec.runner.zygote import PRELOAD

    _entry.lean_process()  # what `main` does before importing the CLI
    for name in ("oiexec.cli", "oiexec.cli.sandbox_cmd", *PRELOAD, *_MCP_CLIENT):
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
            ready, _, _ = select.select([control.fileno(), wake_r], [], [])
        if wake_r in ready:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_r, 4096)
        _reap(waiting)
        if control.fileno() not in ready:
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
    """In the forked child: become the `python -m MODULE` process the request describes."""
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
    user = request.get("user")
    if user is not None:  # as `setpriv --reuid --regid --clear-groups` would start it
        uid, gid = user
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        # A changed uid leaves the process undumpable (its /proc entries root's); a program
        # started by setpriv is dumpable again after its exec.
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 1)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
        os.dup2(fd, target)
        os.close(fd)
    # `python -m` puts the working directory first on the module path.
    sys.path_importer_cache.pop(sys.path[0], None)
    sys.path[0] = os.getcwd()
    sys.argv = ["-m", *request["argv"]]
    # As `python -m MODULE` runs it: a fresh `__main__`, argv[0] its file; a SystemExit
    # ends the process through the interpreter's normal exit.
    # A module the server preloaded runs afresh as `__main__`, as in a fresh process where
    # nothing had imported it (runpy warns about a module it finds already imported).
    sys.modules.pop(request["module"], None)
    runpy.run_module(request["module"], run_name="__main__", alter_sys=True)


def main(fd: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the test worker's to handle
    control = socket.socket(fileno=fd)
    _preload()
    _become(_serve(control))


if __name__ == "__main__":
    main(int(sys.argv[1]))
