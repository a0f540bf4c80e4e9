"""Spawning model-run commands and keeping them on a short leash.

Every command gets its own session (so its whole process group can be signalled), stdin that
is never the runner's own (the SDK may have written the prompt to it), and stdout+stderr
merged into one stream read by a background thread. Nothing here waits without a bound: a
background child that keeps the output pipe open must not hold a tool call hostage.

Commands end with the runner, even a SIGKILLed one: see oiexec/tools/spawn.py.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import fcntl
import os
import select
import signal
import struct
import subprocess
import threading
import time
from collections.abc import Callable

from oiexec.core.interrupts import uninterruptible
from oiexec.core.policy import PreparedCommand
from oiexec.core.redact import longest_form, redact
from oiexec.tools.spawn import spawner, tie, tied_to_runner

#: After SIGTERM, how long the group gets before SIGKILL.
KILL_GRACE = 1.0
#: After the main process exits, how long to wait for output still in flight.
DRAIN_GRACE = 0.3
#: Output kept per buffer (head and tail halves); the middle of a flood is dropped.
OUTPUT_CAP_BYTES = 1024 * 1024
#: Live sessions before the least recently used one is closed (as Codex).
MAX_SESSIONS = 64
FIRST_SESSION_ID = 1000
_POLL_SLICE_MS = 50
_PTY_ROWS, _PTY_COLS = 24, 200


class StdinClosed(Exception):
    """The process no longer reads its stdin."""


class _Capped:
    """A byte buffer keeping its first and last `cap / 2` bytes and counting the rest.

    When the middle is dropped, a secret could straddle a cut and leave a fragment no later
    redaction recognises. So each kept half is held with a margin as long as the longest
    registered secret form, redacted whole, and only then cut to its size."""

    def __init__(self, cap: int = OUTPUT_CAP_BYTES) -> None:
        self._half = cap // 2
        self._margin = longest_form()
        self._head = bytearray()
        self._tail = bytearray()
        self._total = 0

    @property
    def dropped(self) -> int:
        return max(0, self._total - 2 * self._half)

    def append(self, data: bytes) -> None:
        self._total += len(data)
        keep = self._half + self._margin
        room = keep - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        self._tail += data
        excess = len(self._tail) - keep
        if excess > 0:
            del self._tail[:excess]

    def getvalue(self) -> bytes:
        if not self.dropped:
            return bytes(self._head + self._tail)
        keep = self._half + self._margin
        # Until the tail has lost bytes, head and tail are one run of the output: the tail's
        # half is then taken from all of it, as the head's margin may overlap it.
        whole = bytes(self._head + self._tail) if self._total <= 2 * keep else b""
        head = whole[:keep] if whole else bytes(self._head)
        tail = whole[-keep:] if whole else bytes(self._tail)
        marker = f"\n…{self.dropped} bytes of output dropped…\n".encode()
        return _redacted(head)[: self._half] + marker + _redacted(tail)[-self._half :]


def _redacted(data: bytes) -> bytes:
    """`data` with registered secrets masked, undecodable bytes kept as they were."""
    return redact(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")


def exit_status(returncode: int) -> int:
    """Shell convention: death by signal n is reported as 128 + n."""
    return 128 - returncode if returncode < 0 else returncode


class ProcessSession:
    """One spawned command: its process group, its merged output and its stdin.

    Raises OSError from the constructor when the command cannot be started.
    """

    def __init__(self, prepared: PreparedCommand, *, tty: bool = False) -> None:
        self.prepared = prepared
        self.tty = tty
        self.started_at = time.monotonic()
        #: Whoever tracks this session (e.g. the exec tool's item); opaque here.
        self.owner: object | None = None
        #: Called once when the registry closes a session its owner never finished.
        self.on_close: Callable[[ProcessSession], object] | None = None
        # The main thread enters the plain lock (`with self._lock`), never the Condition, and
        # uses no Event: `Condition.__enter__` and `Event.wait` take their lock in Python code,
        # and the exception Ctrl-C, SIGTERM or --timeout raises in the main thread could land
        # just after, leaving the lock held for good: the reader and waiter threads then block
        # on it, and the clean-up that waits for them hangs (`providers/idle.py` had that bug).
        # A C lock's `with` cannot be cut between acquiring and entering; inside it the main
        # thread still waits on the Condition, which gives the lock back however it ends.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._exit_seen = False
        self._pending = _Capped()
        self._all = _Capped()
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._eof = False
        self._discard = False
        self._stop_at: float | None = None
        self._closed = False
        if tty:
            self._popen, self._out_fd = _spawn_pty(prepared)
            self._in_fd = self._out_fd
        else:
            self._popen, self._out_fd, self._in_fd = _spawn_pipes(prepared)
        self.pid = self._popen.pid
        self._reader = threading.Thread(
            target=self._read_loop, name=f"oiexec-output-{self.pid}", daemon=True
        )
        self._reader.start()
        # A blocking waitpid in its own thread wakes `wait()` the moment the process exits;
        # Popen.wait(timeout) polls with sleeps of up to 50 ms, paid on every command.
        threading.Thread(
            target=self._wait_for_exit, name=f"oiexec-wait-{self.pid}", daemon=True
        ).start()

    def _wait_for_exit(self) -> None:
        with contextlib.suppress(Exception):
            self._popen.wait()
        with self._lock:
            self._exit_seen = True
            self._cond.notify_all()

    # --- output -----------------------------------------------------------------------

    def _read_loop(self) -> None:
        poller = select.poll()
        poller.register(self._out_fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        try:
            while True:
                ready = poller.poll(_POLL_SLICE_MS)
                stop_at = self._stop_at
                if stop_at is not None and (not ready or time.monotonic() >= stop_at):
                    return
                if not ready:
                    continue
                try:
                    data = os.read(self._out_fd, 65536)
                except BlockingIOError:
                    continue
                except OSError:
                    return  # EIO: every holder of the PTY's slave side is gone
                if not data:
                    return
                with self._lock:
                    if not self._discard:
                        self._pending.append(data)
                        self._all.append(data)
                    self._cond.notify_all()
        finally:
            with self._lock:
                self._eof = True
                self._cond.notify_all()

    def take_output(self) -> str:
        """Output produced since the last call, decoded as UTF-8 (invalid bytes replaced)."""
        with self._lock:
            data = self._pending.getvalue()
            self._pending = _Capped()
            final = self._eof
        return self._decoder.decode(data, final=final)

    def output_so_far(self) -> str:
        """Everything the command printed (its head and tail past `OUTPUT_CAP_BYTES`)."""
        with self._lock:
            data = self._all.getvalue()
        return data.decode("utf-8", errors="replace")

    # --- status -----------------------------------------------------------------------

    @property
    def exit_code(self) -> int | None:
        """The exit status once the main process has exited (signals as 128 + n)."""
        rc = self._popen.poll()
        return None if rc is None else exit_status(rc)

    def wait(self, timeout: float) -> int | None:
        """Wait up to `timeout` seconds for the main process to exit, then briefly for its
        last output. Returns the exit status, or None if it is still running."""
        with self._lock:
            if not self._cond.wait_for(lambda: self._exit_seen, max(0.0, timeout)):
                return None
        self._drain()
        return self.exit_code

    def _drain(self) -> None:
        # The reader keeps running: a background child may still hold the output open, and
        # closing our end would kill it with SIGPIPE. Only the wait for EOF is bounded.
        with self._lock:
            self._cond.wait_for(lambda: self._eof, DRAIN_GRACE)

    def group_alive(self) -> bool:
        """Whether any process of the command's group still exists."""
        self._popen.poll()  # reap the main process first, or its zombie would count
        return group_alive(self.pid)

    # --- input ------------------------------------------------------------------------

    def write(self, chars: str, timeout: float = 5.0) -> int:
        """Write `chars` to the process's stdin; returns the bytes written before `timeout`
        (a process that does not read cannot block us). Raises `StdinClosed` when nobody
        reads stdin any more."""
        if self._closed:
            raise StdinClosed("the process has been closed")
        data = chars.encode("utf-8")
        deadline = time.monotonic() + timeout
        poller = select.poll()
        poller.register(self._in_fd, select.POLLOUT | select.POLLERR)
        written = 0
        while written < len(data):
            left_ms = int((deadline - time.monotonic()) * 1000)
            if left_ms <= 0:
                break
            if not poller.poll(min(left_ms, _POLL_SLICE_MS)):
                continue
            try:
                written += os.write(self._in_fd, data[written : written + 4096])
            except BlockingIOError:
                continue
            except OSError as exc:
                if exc.errno in (errno.EPIPE, errno.EIO, errno.EBADF):
                    raise StdinClosed("the process's stdin is closed") from exc
                raise
        return written

    # --- ending -----------------------------------------------------------------------

    def terminate(self) -> None:
        """Ask the whole group to stop (SIGTERM) without waiting."""
        if self.group_alive():
            _signal_group(self.pid, signal.SIGTERM)

    def kill(self, grace: float = KILL_GRACE) -> int | None:
        """SIGTERM the whole group, SIGKILL it after `grace`; returns the exit status."""
        if self.group_alive():
            _signal_group(self.pid, signal.SIGTERM)
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and self.group_alive():
                time.sleep(0.02)
            _signal_group(self.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._popen.wait(timeout=5.0)
        return self.exit_code

    def detach(self) -> None:
        """Stop collecting output but leave background children of the command running
        until `close`; their writes are read and discarded so they do not die of SIGPIPE."""
        with self._lock:
            self._discard = True
            self._pending = _Capped()

    def close(self, grace: float = KILL_GRACE) -> None:
        """Kill what is left of the group, stop the reader and release the descriptors."""
        if self._closed:
            return
        self.kill(grace)
        self._stop_at = time.monotonic() + DRAIN_GRACE
        self._reader.join(timeout=DRAIN_GRACE + 1.0)
        self._closed = True
        if not self._reader.is_alive():  # never close an fd a thread may still poll
            self._release_fds()

    def _release_fds(self) -> None:
        if self.tty:
            with contextlib.suppress(OSError):
                os.close(self._out_fd)
            return
        for stream in (self._popen.stdin, self._popen.stdout):
            if stream is not None:
                stream.close()


def group_alive(pgid: int) -> bool:
    """Whether a process group has a member that is not a zombie. Orphaned children are
    reaped by init, which may take a while (a second here), so zombies do not count."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True  # no procfs (macOS): trust killpg
    return any(entry.isdigit() and _live_member(int(entry), pgid) for entry in entries)


def _live_member(pid: int, pgid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return False
    # After the command name: state, ppid, pgrp, ...
    return len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X")


def _spawn_pipes(prepared: PreparedCommand) -> tuple[subprocess.Popen[bytes], int, int]:
    popen = spawner.run(lambda: _popen_pipes(prepared))
    assert popen.stdin is not None and popen.stdout is not None
    os.set_blocking(popen.stdin.fileno(), False)
    return popen, popen.stdout.fileno(), popen.stdin.fileno()


def _popen_pipes(prepared: PreparedCommand) -> subprocess.Popen[bytes]:
    argv, preexec = tie(prepared.argv, prepared.preexec_fn, env=prepared.env, cwd=prepared.cwd)
    return subprocess.Popen(
        argv,
        env=prepared.env,
        cwd=prepared.cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        bufsize=0,
        start_new_session=True,
        pass_fds=prepared.pass_fds,
        preexec_fn=preexec,
    )


def _spawn_pty(prepared: PreparedCommand) -> tuple[subprocess.Popen[bytes], int]:
    # Imported here, before the fork: pty and termios (and tty) serve only `tty` commands.
    import pty
    import termios

    master, slave = pty.openpty()
    inner = prepared.preexec_fn

    def own_terminal() -> None:
        # Runs after setsid(): make the PTY the controlling terminal so /dev/tty works.
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        if inner is not None:
            inner()

    try:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", _PTY_ROWS, _PTY_COLS, 0, 0))
        popen = spawner.run(
            lambda: subprocess.Popen(
                prepared.argv,
                env=prepared.env,
                cwd=prepared.cwd,
                stdin=slave,
                stdout=slave,
                stderr=slave,
                bufsize=0,
                start_new_session=True,
                pass_fds=prepared.pass_fds,
                preexec_fn=tied_to_runner(own_terminal),
            )
        )
    except BaseException:
        os.close(master)
        raise
    finally:
        os.close(slave)
    os.set_blocking(master, False)
    return popen, master


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


class ProcessRegistry:
    """Sessions by integer id (numbers, as Codex gives them). `close_all` kills every
    group; the runner registers it with `ctx.cleanup.callback(registry.close_all)`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[int, ProcessSession] = {}
        self._used: dict[int, float] = {}
        self._detached: list[ProcessSession] = []
        self._next_id = FIRST_SESSION_ID

    def spawn(self, prepared: PreparedCommand, *, tty: bool = False) -> tuple[int, ProcessSession]:
        """Start `prepared` and register it; raises OSError if it cannot be started."""
        # A timeout or SIGTERM landing between the spawn and the registration would leave the
        # command running unseen by `close_all`: it is held until the command is registered.
        with uninterruptible():
            session = ProcessSession(prepared, tty=tty)
            with self._lock:
                session_id = self._next_id
                self._next_id += 1
                self._sessions[session_id] = session
                self._used[session_id] = time.monotonic()
                evict = self._least_recently_used() if len(self._sessions) > MAX_SESSIONS else None
                stale = self._sessions.pop(evict) if evict is not None else None
                if evict is not None:
                    self._used.pop(evict)
        if stale is not None:
            self._close_session(stale)
        return session_id, session

    def get(self, session_id: int) -> ProcessSession | None:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is not None:
                self._used[session_id] = time.monotonic()
            return session

    def release(self, session_id: int) -> None:
        """Forget a finished session. Background children still in its group (a server
        started with `&`) keep running until `close_all`."""
        with self._lock:
            session = self._sessions.pop(session_id, None)
            self._used.pop(session_id, None)
        if session is None:
            return
        if session.group_alive():
            session.detach()
            with self._lock:
                self._detached.append(session)
        else:
            session.close()

    def close_all(self) -> None:
        """Kill every process group, run the owners' `on_close` hooks, release everything."""
        with self._lock:
            sessions = list(self._sessions.values())
            detached = list(self._detached)
            self._sessions.clear()
            self._used.clear()
            self._detached.clear()
        everyone = sessions + detached
        # One shared grace period rather than one per session.
        for session in everyone:
            session.terminate()
        deadline = time.monotonic() + KILL_GRACE
        while time.monotonic() < deadline and any(s.group_alive() for s in everyone):
            time.sleep(0.02)
        for session in everyone:
            session.close(grace=0.0)
        # Hooks run only once every group is dead, so one failing hook cannot leak the rest.
        errors: list[Exception] = []
        for session in sessions:
            try:
                self._run_hook(session)
            except Exception as exc:
                errors.append(exc)
        if errors:
            raise errors[0]

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def _least_recently_used(self) -> int:
        return min(self._used, key=lambda sid: self._used[sid])

    @classmethod
    def _close_session(cls, session: ProcessSession) -> None:
        session.close()
        cls._run_hook(session)

    @staticmethod
    def _run_hook(session: ProcessSession) -> None:
        hook, session.on_close = session.on_close, None
        if hook is not None:
            hook(session)
