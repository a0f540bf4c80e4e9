"""The zygote: one preloaded process that forks every run's process, reachable by nobody but
the caller that started it.

A run is started in a process of its own (a batch task, a Python API turn): the runner keeps
process-global state (signal handlers, the SIGALRM deadline, the secret redaction registry,
the working directory), so two runs must never share a process. Started fresh, such a process
spends about 0.4 CPU-seconds importing click, pydantic, httpx and the runner before it does
anything; forked from a process that has already imported them, it starts at once and shares
the imported code's pages copy-on-write.

The zygote is exec'd fresh by its caller (`launch.py`; never forked from the caller, whose
threads would make a fork unsafe) and speaks to it over one end of a socketpair it inherits:
no path, no abstract name, nothing listening, so no other process (a sandboxed command
included) can reach it. Requests and replies are JSON lines of the one child protocol
(`child_protocol.py`, never pickle); a request names its target from the fixed `TARGETS` and
carries the child's file descriptors (its stdio, its message pipe) as SCM_RIGHTS. The zygote
is single-threaded, so forking is safe; it is the runs' parent, so it reaps them and reports
each exit status. It exits when the caller's end closes (the caller exited or was killed), and
its children then get SIGTERM (their parent-death signal), which ends a run as a CI
cancellation does.

    caller -> zygote  SpawnRequest   + fds: the target's, then the child's life pipe
    zygote -> caller  Started | Refused | Exited
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import os
import select
import signal
import socket
import sys
from collections.abc import Callable
from typing import Any

from oiexec.runner.child_protocol import (
    TARGETS,
    Exited,
    ProtocolError,
    Refused,
    SocketReader,
    Started,
    close_fds,
    send,
)

__all__ = ["PRELOAD", "TARGETS", "main"]

#: What a run imports on its way to the first request: loaded once, in the zygote.
PRELOAD = (
    "oiexec.cli",
    "oiexec.cli.exec_cmd",
    "oiexec.cli.options",
    "oiexec.cli.prompt",
    "oiexec.cli.request",
    "oiexec.runner.exec",
    "oiexec.runner.review",
    "oiexec.runner.batch.launcher",
    # The Python API's side of a run (named, not imported: the zygote loads it, this module
    # does not depend on it).
    "oiexec.api.child",
    "oiexec.agent.loop",
    "oiexec.config.loader",
    "oiexec.harness.registry",
    "oiexec.harness.select",
    "oiexec.harness.manifest",
    "oiexec.harness.agents_md",
    "oiexec.harness.styles",
    "oiexec.tools.exec_command",
    "oiexec.tools.patch_tool",
    "oiexec.tools.update_plan",
    "oiexec.providers.registry",
    "oiexec.providers.responses",
    "oiexec.providers.chat",
    "oiexec.providers.messages",
    "oiexec.sandbox.select",
    "oiexec.sandbox.writer",
    "oiexec.session.store",
    "oiexec.output.jsonl",
    "oiexec.output.junit",
    "oiexec.output.diff",
    "oiexec.output.runlog",
    "oiexec.runner.ci_report",
    "oiexec.runner.mcp",
    "oiexec.cli.failure_line",
    "oiexec.extensions.hooks",
    "oiexec.extensions.hook_events",
    "oiexec.extensions.outside",
    "oiexec.extensions.notify",
    "oiexec.harness.web_search",
    # What the standard library loads on a run's way: the JUnit report's pretty-printer, the
    # diff's, the HTTP client's host names, the hooks' thread pool.
    "xml.dom.expatbuilder",
    "difflib",
    "encodings.idna",
    "concurrent.futures.thread",
    # Not the model catalogs: a task's first look-up runs in a probe of its own
    # (oiexec/catalog/probe.py), so a task never carries them.
    "oiexec.catalog.facts",
    "httpx",
    "httpcore",
    "pydantic",
    "junit_xml",
)

# -- the zygote -------------------------------------------------------------------------------


def preload() -> None:
    """What every run would otherwise load for itself, loaded once here and shared by its
    forks."""
    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    # What is loaded now lives as long as the zygote: out of the collector's sight, a fork's
    # garbage collections never write to these objects' headers, so their pages stay shared
    # with the zygote instead of being copied into every task (gc.freeze's purpose).
    gc.collect()
    gc.freeze()


def main(fd: int) -> None:
    """The zygote's whole life: preload, then serve the caller on `fd` until it goes."""
    # A terminal's Ctrl-C is the caller's to handle; the zygote ends when the caller does.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sock = socket.socket(fileno=fd)
    preload()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    # A handler (not SIG_DFL) so that SIGCHLD is delivered and wakes the select below.
    signal.signal(signal.SIGCHLD, lambda _signum, _frame: None)
    zygote = _Zygote(sock, (wake_r, wake_w))
    try:
        zygote.serve()
    finally:
        os._exit(0)


class _Zygote:
    def __init__(self, sock: socket.socket, wake: tuple[int, int]) -> None:
        self._sock = sock
        self._reader = SocketReader(sock)
        self._wake = wake
        self._pid = os.getpid()

    def serve(self) -> None:
        while True:
            try:
                ready, _, _ = select.select([self._sock.fileno(), self._wake[0]], [], [])
            except InterruptedError:  # pragma: no cover - PEP 475 retries select
                continue
            if self._wake[0] in ready:
                with contextlib.suppress(BlockingIOError, InterruptedError):
                    os.read(self._wake[0], 4096)
            self._reap()
            if self._sock.fileno() in ready and not self._serve_ready():
                return

    def _serve_ready(self) -> bool:
        """Handles the requests one read completes; False when the caller is gone."""
        try:
            received = self._reader.receive()
        except OSError:
            return False
        if received is None:
            return False
        for message, fds in received:
            self._serve_one(message, fds)
        return True

    def _serve_one(self, message: dict[str, Any] | ProtocolError, fds: list[int]) -> None:
        if isinstance(message, ProtocolError):
            self._reply(Refused(op="refused", id=None, error=f"malformed request: {message}"))
            return
        request_id = message.get("id") if type(message.get("id")) is int else None
        try:
            request = _Request.parse(message, fds)
            assert request_id is not None  # parse checked it
            pid = os.fork()
        except (ValueError, OSError) as exc:  # a bad request, or no process to be had
            close_fds(fds)
            self._reply(Refused(op="refused", id=request_id, error=str(exc)))
            return
        if pid == 0:
            self._child(request)  # never returns
        close_fds(fds)
        self._reply(Started(op="started", id=request_id, pid=pid))

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self._reply(Exited(op="exit", pid=pid, status=os.waitstatus_to_exitcode(status)))

    def _reply(self, message: Started | Refused | Exited) -> None:
        # The caller gone: the next read sees the end of the stream and the zygote exits.
        with contextlib.suppress(OSError):
            send(self._sock, message)

    def _child(self, request: _Request) -> None:
        code = 1
        try:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            self._sock.close()
            self._reader.close()
            close_fds(self._wake)
            _become_run(request.env, request.cwd, self._pid)
            module, _, function = TARGETS[request.target].partition(":")
            target: Callable[[dict[str, Any], list[int]], int] = getattr(
                importlib.import_module(module), function
            )
            code = target(request.args, request.fds)
        except SystemExit as exc:
            code = 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 1
        except BaseException as exc:  # a child must never fall back into the zygote's loop
            with contextlib.suppress(BaseException):
                print(f"oiexec: the run's process failed: {exc!r}", file=sys.stderr, flush=True)
        finally:
            os._exit(code & 0xFF)


class _Request:
    """A spawn request, checked field by field before anything is forked."""

    def __init__(
        self, target: str, args: dict[str, Any], env: dict[str, str], cwd: str, fds: list[int]
    ) -> None:
        self.target, self.args, self.env, self.cwd = target, args, env, cwd
        #: The target's descriptors; the life pipe (the last one received) stays open,
        #: close-on-exec, for as long as the child lives.
        self.fds = fds[:-1]

    @classmethod
    def parse(cls, message: dict[str, Any], fds: list[int]) -> _Request:
        if message.get("op") != "spawn":
            raise ValueError(f"unknown request {message.get('op')!r}")
        if type(message.get("id")) is not int:
            raise ValueError("id must be a whole number")
        target = message.get("target")
        if not isinstance(target, str) or target not in TARGETS:
            raise ValueError(f"unknown target {target!r} (known: {', '.join(sorted(TARGETS))})")
        args, env, cwd = message.get("args"), message.get("env"), message.get("cwd")
        if not isinstance(args, dict):
            raise ValueError("args must be an object")
        if not isinstance(env, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and k and "=" not in k and "\0" not in k + v
            for k, v in env.items()
        ):
            raise ValueError("env must map variable names to strings")
        if not isinstance(cwd, str) or not os.path.isabs(cwd) or "\0" in cwd:
            raise ValueError("cwd must be an absolute path")
        if not fds:
            raise ValueError("no descriptors: the life pipe comes last")
        return cls(target, args, env, cwd, fds)


def _become_run(env: dict[str, str], cwd: str, zygote: int) -> None:
    """In a fresh child: its own session, tied to the zygote's life, in `cwd` with `env`."""
    # Its own session and process group: the caller signals the run with everything it
    # started, and a terminal's Ctrl-C reaches only the caller, which decides.
    os.setsid()
    if sys.platform.startswith("linux"):
        # The caller killed outright (kill -9, OOM) closes the zygote's socket, the zygote
        # exits, and this signal ends the run as a CI cancellation does (commands killed,
        # session and reports written). The zygote is single-threaded: its only thread is
        # the one that forked, so the signal comes exactly when it exits.
        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)
        if os.getppid() != zygote:  # it was gone before the signal was asked for
            os.kill(os.getpid(), signal.SIGTERM)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)


if __name__ == "__main__":  # pragma: no cover - started by launch.py with its own bootstrap
    main(int(sys.argv[1]))
