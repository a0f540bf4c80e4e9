"""Starting a run's process: the caller's side of the zygote (`zygote.py`).

One zygote per caller process, started on the first run (batch and the Python API share it)
and again after it died. It is reached only through the socketpair it inherited, so the
protocol needs no authentication: nobody else holds an end. One reader thread per zygote
takes its replies and the exit statuses of the runs it forked.

If the zygote dies (killed, OOM), the runs it had started get SIGTERM and end as cancelled;
`Child.wait` then raises `LaunchError` saying so once the run's process has ended (its exit
status went with the zygote), and the next run starts a new zygote.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from oiexec.core.errors import OiexecError
from oiexec.runner.child_protocol import (
    ProtocolError,
    SocketReader,
    SpawnRequest,
    ZygoteReply,
    checked,
    send,
)

__all__ = ["Child", "LaunchError", "Zygote", "spawn"]

#: Imports the zygote with the caller's import path (without the working directory: nothing
#: a run writes there can be imported), then serves the inherited socket. First it keeps out
#: what the CLI keeps out of a run (`oiexec._entry.lean_process`: httpx's own command line
#: client with rich and pygments, importlib.metadata), which its preload would otherwise
#: load and every fork carry: ~130 modules and a tenth of a second before the first run.
_BOOT = (
    "import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
    "from oiexec._entry import lean_process; lean_process(); "
    "from oiexec.runner.zygote import main; main(int(sys.argv[2]))"
)


class LaunchError(OiexecError):
    """A run's process could not be started, or its zygote died while it ran."""


class Child:
    """One run's process, forked by the zygote: its pid (also its process group id) and, once
    it has ended, its exit status (negative: killed by that signal). What batch, the Python
    API and `mcp-server` hold of a run."""

    def __init__(self, zygote: Zygote, life: int) -> None:
        self._zygote = zygote
        self._cond = threading.Condition(zygote.lock)
        #: The read end of a pipe whose only writer is the child: at its end of file the
        #: child is gone, which is how its end is seen once the zygote (its parent) died.
        self._life = life
        self.pid = 0
        self._status: int | None = None
        self._lost: str | None = None
        self._refused: str | None = None

    def poll(self) -> int | None:
        return self.wait(0)

    def wait(self, timeout: float | None = None) -> int | None:
        """The exit status, or None if still running after `timeout` seconds (None: wait as
        long as it takes). Raises `LaunchError` once the child has ended if the zygote died
        first: the run was stopped and its status is unknown."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._status is None and self._lost is None:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return None
                self._cond.wait(left)
            if self._status is not None:
                self.close()
                return self._status
            lost = self._lost or "the run's process launcher died"
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not self._life_ended(left):
            return None
        self.close()
        raise LaunchError(
            lost,
            hint="The run was stopped with it. Run it again; a new launcher is started.",
        )

    def signal(self, signum: int) -> None:
        """Sends `signum` to the run's process group: the run and everything it started.

        The pid is known as soon as the zygote has forked, before the child has made its own
        session (its first step): a signal sent then finds no such group, and was lost (a
        batch interrupted while its tasks were being started left them running). Such a child
        gets the signal itself; it has started nothing yet. Never once it has ended: its pid
        may be another process's by then."""
        try:
            os.killpg(self.pid, signum)
        except ProcessLookupError:
            if self._status is None and self._lost is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(self.pid, signum)
        except PermissionError:
            pass

    def close(self) -> None:
        """Lets go of the life pipe (done by `wait` once the end is known)."""
        life, self._life = self._life, -1
        if life >= 0:
            with contextlib.suppress(OSError):
                os.close(life)

    def _life_ended(self, timeout: float | None) -> bool:
        if self._life < 0:
            return True
        poller = select.poll()
        poller.register(self._life, select.POLLIN)
        # The child never writes: readable means its end of file (it and every copy of its
        # write end are gone).
        return bool(poller.poll(None if timeout is None else int(timeout * 1000)))

    # -- called by the zygote's reader, under the lock ---------------------------------------

    def _started(self, pid: int) -> None:
        self.pid = pid
        self._cond.notify_all()

    def _exited(self, status: int) -> None:
        self._status = status
        self._cond.notify_all()

    def _fail(self, *, refused: str | None = None, lost: str | None = None) -> None:
        self._refused = self._refused or refused
        self._lost = self._lost or lost
        self._cond.notify_all()


class Zygote:
    """The caller's handle of one zygote process."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        paths = _import_path()
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-P", "-c", _BOOT, json.dumps(paths), str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                # Its own session: a terminal's Ctrl-C is the caller's; the zygote ends
                # when the caller's end of the socket closes.
                start_new_session=True,
                # Nothing a run writes in the caller's directory is on the zygote's way.
                cwd="/",
            )
        except OSError as exc:
            mine.close()
            raise LaunchError(f"cannot start the runner's process launcher: {exc}") from None
        finally:
            theirs.close()
        self.pid = self._process.pid
        self._sock = mine
        self._send_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._pending: dict[int, Child] = {}
        self._running: dict[int, Child] = {}
        self._dead: str | None = None
        self._owner = os.getpid()
        threading.Thread(target=self._read, name="oiexec-zygote", daemon=True).start()

    @property
    def alive(self) -> bool:
        return self._dead is None and os.getpid() == self._owner

    def spawn(
        self,
        target: str,
        args: Mapping[str, Any],
        *,
        env: Mapping[str, str],
        cwd: str,
        fds: Sequence[int] = (),
    ) -> Child:
        """Forks a child running `target` (one of the zygote's `TARGETS`) with `args`, in
        `cwd` with exactly `env`, handed `fds` (the caller keeps its own copies)."""
        life_r, life_w = os.pipe()
        child = Child(self, life_r)
        request_id = next(self._ids)
        message = SpawnRequest(
            op="spawn",
            id=request_id,
            target=target,
            args=dict(args),
            env=dict(env),
            cwd=cwd,
            fds=len(fds) + 1,
        )
        try:
            with self.lock:
                if self._dead is not None:
                    raise LaunchError(self._dead)
                self._pending[request_id] = child
            try:
                with self._send_lock:
                    send(self._sock, message, [*fds, life_w])
            except OSError as exc:
                raise LaunchError(f"cannot reach the runner's process launcher: {exc}") from None
        except BaseException:
            self._forget(request_id)
            child.close()
            raise
        finally:
            os.close(life_w)  # the child holds the only write end
        with child._cond:
            while child.pid == 0 and child._refused is None and child._lost is None:
                child._cond.wait()
        if child.pid == 0:
            child.close()
            raise LaunchError(
                child._refused or child._lost or "the run was not started",
                hint=None if child._refused is None else "This is a bug in oiexec.",
            )
        return child

    def close(self) -> None:
        """Ends the zygote (its runs get SIGTERM); used by tests and at a fork."""
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)

    def _forget(self, request_id: int) -> None:
        with self.lock:
            self._pending.pop(request_id, None)

    def _read(self) -> None:
        reader = SocketReader(self._sock)
        try:
            while (received := reader.receive()) is not None:
                for message, fds in received:
                    for fd in fds:  # the zygote sends none; never keep one
                        os.close(fd)
                    if not isinstance(message, ProtocolError):
                        self._take(message)
        except Exception:  # any failure to read ends this zygote for us
            pass
        reader.close()
        self._died()

    def _take(self, message: dict[str, Any]) -> None:
        try:
            reply: ZygoteReply = checked(message, ZygoteReply)
        except ProtocolError:
            return  # nothing of ours: the zygote writes only these
        with self.lock:
            if reply["op"] == "started":
                child = self._pending.pop(reply["id"], None)
                if child is not None:
                    self._running[reply["pid"]] = child
                    child._started(reply["pid"])
            elif reply["op"] == "refused":
                child = None if reply["id"] is None else self._pending.pop(reply["id"], None)
                if child is not None:
                    child._fail(refused=f"the launcher refused the run: {reply['error']}")
            else:
                child = self._running.pop(reply["pid"], None)
                if child is not None:
                    child._exited(reply["status"])

    def _died(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()
        try:
            code = self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            code = self._process.wait()
        how = _describe(code)
        with self.lock:
            self._dead = f"the runner's process launcher (pid {self.pid}) {how}"
            for child in self._pending.values():
                child._fail(lost=f"{self._dead} before it started the run")
            for child in self._running.values():
                child._fail(
                    lost=f"{self._dead} while the run was going; the run was stopped "
                    "(SIGTERM) and its exit status is unknown"
                )
            self._pending.clear()
            self._running.clear()


def _import_path() -> list[str]:
    """The zygote's `sys.path`: this package's own root first (where the caller imported it
    from), then the caller's absolute entries except its working directory, which Python
    put there for `-c`, `-m` or a prompt and where a run may have planted modules."""
    try:
        cwd: str | None = os.getcwd()
    except OSError:
        cwd = None
    # Two levels above this package's directory (oiexec/runner/ -> oiexec/ -> its root).
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    paths = [root]
    for entry in sys.path:
        if entry and os.path.isabs(entry) and entry != cwd and entry not in paths:
            paths.append(entry)
    return paths


def _describe(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


# -- the process's zygote ---------------------------------------------------------------------

_shared: Zygote | None = None
_shared_lock = threading.Lock()
#: The interpreter the first zygote was started from, as (path, device, inode).
_interpreter: tuple[str, int, int] | None = None


def spawn(
    target: str,
    args: Mapping[str, Any],
    *,
    env: Mapping[str, str],
    cwd: str,
    fds: Sequence[int] = (),
) -> Child:
    """`Zygote.spawn` on this process's zygote, started (again) when there is none alive."""
    return _zygote().spawn(target, args, env=env, cwd=cwd, fds=fds)


def prestart() -> None:
    """Starts this process's zygote now, if none is alive, so that its imports overlap what
    the caller does before its first run (`LaunchError` if it cannot be started)."""
    _zygote()


def _zygote() -> Zygote:
    global _shared
    with _shared_lock:
        if _shared is None or not _shared.alive:
            _check_interpreter()
            _shared = Zygote()
        return _shared


def _check_interpreter() -> None:
    """A zygote started again, after runs have had a workspace to write in, must come from
    the same interpreter file as the first one: the caller's Python may live in a virtualenv
    inside the workspace, where a run could have replaced it."""
    global _interpreter
    path = sys.executable
    try:
        st = os.stat(path)
    except OSError as exc:
        raise LaunchError(f"cannot start the runner's process launcher: {exc}") from None
    if _interpreter is None:
        _interpreter = (path, st.st_dev, st.st_ino)
    elif _interpreter != (path, st.st_dev, st.st_ino):
        raise LaunchError(
            f"{path} is no longer the file this process started its first run with; "
            "not starting the runner's process launcher from it",
            hint="A run may have replaced it. Start the program again.",
        )


def _forget_after_fork() -> None:
    """A forked copy of the caller does not share its parent's zygote (nor its reader)."""
    global _shared
    _shared = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
