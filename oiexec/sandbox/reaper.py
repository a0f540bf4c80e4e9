"""Kill everything a command started, even what left its process group (Landlock backend).

bwrap needs nothing of this: its PID 1 exits with the command and the kernel kills the rest of
the PID namespace. The Landlock backend has no namespace, and a `setsid -f` child is out of
the process group the runner signals. So each command gets a **sentinel**:

* In the child's `preexec_fn`, right after `landlock_restrict_self`, `Control.start_sentinel`
  spawns `/bin/sh` running `SCRIPT`. The sentinel stays in that Landlock domain; the command
  then restricts itself once more, into a domain nested in it. With signal scoping (Landlock
  ABI >= 6) a process may only signal its own domain and the domains nested in it, so the
  sentinel can signal everything the command ever starts, the command cannot signal the
  sentinel, and `kill -KILL -1` from the sentinel reaches that command's processes only, even
  for a root runner. Without scoping `kill -1` would hit every process of the user (or of the
  host, for root): never spawn a sentinel there.
* The sentinel is spawned with `posix_spawn` (a vfork: no page-table copy of the runner, no
  extra exec on the command's path), in a session of its own (no terminal hang-up, no
  process-group signal reaches it), with every descriptor closed but its end of a socket pair:
  it must not hold Popen's exec-status pipe or the command's output pipe open.
* `Control.finish` (the backend's `after()`) sends a line; so does the runner's death (EOF).
  The sentinel then kills, rescans `/proc` until nothing it may signal is alive (zombies are
  dead enough), answers `ok` and exits. The scan uses shell builtins only: under a fork bomb
  the sentinel cannot fork either. When the runner knows nothing is left (the command's pids
  cgroup is empty), `Control.dismiss` sends `done` and the sentinel exits without the scan.

Without signal scoping (ABI < 6) `kill -1` is out of the question, and the sentinel is a
smaller one, `GROUP_SCRIPT`: it kills the command's process group (its parent's pid: the child
made its own session before spawning it) when told to, or when the runner dies. Processes the
command moved to another session then outlive it; a root runner's per-command pids cgroup
lists them, and the next run kills what a dead runner's cgroups still hold (`limits.py`).

The child also reports its pid on the same socket once it is ready to exec, so that without a
sentinel (one that died) the runner can still kill the command's process group.

A root runner that gives every command a pids cgroup of its own, with signal scoping, spawns
no sentinel at all: the cgroup lists every process of the command, and one `RunWatcher` per run
(spawned from the runner, outside every command's domain) empties this runner's command
cgroups when the runner dies or the run ends. That saves each command a spawn in its child,
which waits for the sentinel's exec (a scheduling round trip, ~10 ms on a loaded machine).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import select
import signal
import socket
import time

#: How long `finish` waits for the sentinel's answer.
REAP_TIMEOUT = 3.0
#: Landlock ABI with signal scoping (LANDLOCK_SCOPE_SIGNAL).
SCOPED_SIGNALS_ABI = 6

# Builtins only (dash, bash, busybox ash). A process we may signal whose state is neither
# zombie nor dead keeps the loop going; `kill -0` fails with EPERM for everything outside
# the command's domain. The loop is bounded so that an unkillable process (D state) cannot
# keep the sentinel, and with it `after()`, busy forever. stderr is /dev/null already: a
# redirection per `kill` would cost three system calls per process on the host.
SCRIPT = r"""trap '' HUP INT QUIT PIPE TERM ALRM USR1 USR2 TSTP TTIN TTOU
read -r cmd || :
[ "$cmd" = done ] && exit 0
n=0
while :; do
  kill -9 -1
  left=
  for d in /proc/[0-9]*; do
    kill -0 "${d#/proc/}" || continue
    [ "${d#/proc/}" = "$$" ] && continue
    s=
    read -r s < "$d/stat"
    case ${s##*)} in ' Z'*|' X'*|'') continue ;; esac
    left=${d#/proc/}
    break
  done
  [ -z "$left" ] && { echo ok >&0; exit 0; }
  n=$((n + 1))
  [ "$n" -lt 5000 ] || { echo "left $left" >&0; exit 1; }
done
"""

# Without signal scoping: only the command's process group, whose id is the sentinel's parent
# (the command's first process, a session leader since before the spawn). `$PPID` is fixed at
# the shell's start, so it still names the group after that process has exited.
GROUP_SCRIPT = r"""trap '' HUP INT QUIT PIPE TERM ALRM USR1 USR2 TSTP TTIN TTOU
read -r cmd || :
[ "$cmd" = done ] && exit 0
kill -9 -"$PPID"
echo ok >&0
"""

# The run's watcher (`RunWatcher`): $1 is the cgroup parent, $2 the prefix of this runner's
# command cgroups. Told nothing, it waits for the runner to go (EOF) and then kills every
# process listed in those cgroups until they are empty. Builtins only, as `SCRIPT`.
WATCH_SCRIPT = r"""trap '' HUP INT QUIT PIPE TERM ALRM USR1 USR2 TSTP TTIN TTOU
read -r cmd || :
n=0
while :; do
  left=
  for f in "$1"/"$2"*/cgroup.procs; do
    [ -f "$f" ] || continue
    while read -r p; do kill -9 "$p"; left=1; done < "$f"
  done
  [ -z "$left" ] && { echo ok >&0; exit 0; }
  n=$((n + 1))
  [ "$n" -lt 5000 ] || { echo left >&0; exit 1; }
done
"""

_SPAWN_SETSIGDEF = 0x04
_SPAWN_SETSIGMASK = 0x08
_SPAWN_SETSID = 0x80  # glibc >= 2.26, musl >= 1.1.24
# Opaque glibc/musl structures (80 and 336 bytes on 64-bit glibc): generous room for both.
_OPAQUE_BYTES = 1024

_libc = ctypes.CDLL(None, use_errno=True)


def _sigset(*, full: bool) -> ctypes.Array[ctypes.c_char]:
    buf = ctypes.create_string_buffer(_OPAQUE_BYTES)
    (_libc.sigfillset if full else _libc.sigemptyset)(buf)
    return buf


class _Template:
    """What every sentinel spawn shares, allocated once in the parent."""

    def __init__(
        self, script: str, name: bytes = b"oiexec-sentinel", args: tuple[bytes, ...] = ()
    ) -> None:
        self.path = ctypes.c_char_p(b"/bin/sh")
        words = [b"/bin/sh", b"-c", script.encode(), name, *args]
        self.argv = (ctypes.c_char_p * (len(words) + 1))(*words, None)
        self.envp = (ctypes.c_char_p * 1)(None)
        self.devnull = ctypes.c_char_p(b"/dev/null")
        self.attr = ctypes.create_string_buffer(_OPAQUE_BYTES)
        self._empty = _sigset(full=False)
        self._all = _sigset(full=True)
        self.closefrom = getattr(_libc, "posix_spawn_file_actions_addclosefrom_np", None)
        if _libc.posix_spawnattr_init(self.attr) != 0:
            raise OSError(errno.ENOMEM, "posix_spawnattr_init failed")
        flags = _SPAWN_SETSID | _SPAWN_SETSIGMASK | _SPAWN_SETSIGDEF
        _libc.posix_spawnattr_setflags(self.attr, ctypes.c_short(flags))
        _libc.posix_spawnattr_setsigmask(self.attr, self._empty)
        # Default dispositions for every signal: the runner ignores some (SIGPIPE, SIGXFSZ).
        _libc.posix_spawnattr_setsigdefault(self.attr, self._all)


_templates: dict[bool, _Template] = {}


def _shared_template(scoped: bool) -> _Template:
    if scoped not in _templates:
        _templates[scoped] = _Template(SCRIPT if scoped else GROUP_SCRIPT)
    return _templates[scoped]


class Control:
    """One command's link to its sentinel (when `sentinel`) and its child's pid report.

    Made in the parent by the backend's `prepare`; `start_sentinel` and `report_started` run
    in the forked child; `finish` runs once in the runner when the command is over. `scoped`:
    Landlock scopes signals, so the sentinel may kill the whole domain (`SCRIPT`); otherwise
    it kills the process group only (`GROUP_SCRIPT`).
    """

    def __init__(self, *, sentinel: bool, scoped: bool = True) -> None:
        self.sentinel = sentinel
        self._ours, self._theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._fd = self._theirs.fileno()
        self._pid = ctypes.c_int(0)
        self._finished = False
        self._template = _shared_template(scoped) if sentinel else None
        self._actions = ctypes.create_string_buffer(_OPAQUE_BYTES)
        if self._template is not None:
            self._build_actions(self._template)

    def _build_actions(self, tpl: _Template) -> None:
        actions = self._actions
        _libc.posix_spawn_file_actions_init(actions)
        _libc.posix_spawn_file_actions_adddup2(actions, self._fd, 0)
        _libc.posix_spawn_file_actions_addopen(actions, 1, tpl.devnull, os.O_WRONLY, 0)
        _libc.posix_spawn_file_actions_adddup2(actions, 1, 2)
        if tpl.closefrom is not None:
            tpl.closefrom(actions, 3)

    # --- in the child (after fork, before exec) -----------------------------------------

    def start_sentinel(self) -> None:
        tpl = self._template
        assert tpl is not None
        if tpl.closefrom is None:
            # No closefrom action in this libc: list what is open now, in the child.
            for name in os.listdir("/proc/self/fd"):
                fd = int(name)
                if fd > 2:
                    _libc.posix_spawn_file_actions_addclose(self._actions, fd)
        rc = _libc.posix_spawn(
            ctypes.byref(self._pid), tpl.path, self._actions, tpl.attr, tpl.argv, tpl.envp
        )
        if rc != 0:
            raise OSError(rc, f"could not start the sandbox's reaper: {os.strerror(rc)}")

    def report_started(self) -> None:
        """The last step before exec: from here on the runner has a pid to fall back on."""
        os.write(self._fd, b"pid %d\n" % os.getpid())

    # --- in the runner ------------------------------------------------------------------

    def finish(self) -> list[str]:
        """Kill every process of the command; notes for the model when that was not certain."""
        if self._finished:
            return []
        self._finished = True
        # Our copy of the sentinel's end must go first: once only the sentinel holds it, a
        # failed send means the sentinel is gone.
        self._theirs.close()
        try:
            return self._finish()
        finally:
            self._ours.close()

    def dismiss(self) -> None:
        """The command is known to have no process left (its cgroup is empty): let the
        sentinel go without a scan of the host's processes."""
        if self._finished:
            return
        self._finished = True
        self._theirs.close()
        with contextlib.suppress(OSError):
            self._ours.sendall(b"done\n")
        self._ours.close()

    def _finish(self) -> list[str]:
        received = self._read_available()
        pid = _reported_pid(received)
        if pid is None:
            return []  # the child never got as far as exec: nothing of it can be running
        if not self.sentinel:
            _kill_group(pid)
            return []
        try:
            self._ours.sendall(b"go\n")
        except OSError:
            _kill_group(pid)
            return [
                "sandbox: the command's reaper was gone before the command ended, so only its "
                "process group was killed; processes it moved to a new session may still run"
            ]
        answer = received + self._read_until_eof(time.monotonic() + REAP_TIMEOUT)
        if b"\nok\n" in b"\n" + answer:
            return []
        _kill_group(pid)
        left = answer.decode(errors="replace").strip().splitlines()
        detail = left[-1] if left and left[-1].startswith("left") else "no answer"
        return [
            f"sandbox: the command's reaper could not confirm that every process ended "
            f"({detail}); its process group was killed"
        ]

    def _read_available(self) -> bytes:
        data = b""
        with contextlib.suppress(BlockingIOError, InterruptedError):
            while True:
                chunk = self._ours.recv(4096, socket.MSG_DONTWAIT)
                if not chunk:
                    break
                data += chunk
        return data

    def _read_until_eof(self, deadline: float) -> bytes:
        data = b""
        poller = select.poll()
        poller.register(self._ours.fileno(), select.POLLIN | select.POLLHUP)
        while (left := deadline - time.monotonic()) > 0:
            if not poller.poll(int(left * 1000) + 1):
                continue
            try:
                chunk = self._ours.recv(4096, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                break
            if not chunk:
                break
            data += chunk
        return data


class RunWatcher(Control):
    """One `/bin/sh` per run in place of a sentinel per command, where that loses nothing: a
    root runner whose every command has a pids cgroup of its own (which lists all its
    processes, whatever session they moved to) and which commands cannot write (no writable
    root holds it), with signal scoping (ABI >= 6), so no command can signal the watcher,
    which lives outside every command's domain. A command's leftovers are killed through its
    cgroup when it ends (`CommandLimits.release`); the watcher covers the runner's death (EOF
    on its socket) and the end of the run (`finish`), killing whatever is still in this
    runner's command cgroups. Spawned from the runner like a sentinel (posix_spawn, its own
    session, nothing but its socket open).
    """

    def __init__(self, parent: str, prefix: str) -> None:
        super().__init__(sentinel=False)
        self._template = _Template(
            WATCH_SCRIPT, b"oiexec-watcher", (parent.encode(), prefix.encode())
        )
        self._build_actions(self._template)
        self.start_sentinel()
        # It holds its end now; a copy here would keep it from ever seeing EOF.
        self._theirs.close()

    def finish(self) -> list[str]:
        """End of run: kill what is left in this runner's command cgroups."""
        if self._finished:
            return []
        self._finished = True
        try:
            self._ours.shutdown(socket.SHUT_WR)
            answer = self._read_until_eof(time.monotonic() + REAP_TIMEOUT)
        except OSError:
            answer = b""
        finally:
            self._ours.close()
            self._reap()
        if b"ok" in answer:
            return []
        return ["sandbox: the run's reaper could not confirm that every process of it ended"]

    def _reap(self) -> None:
        """The watcher is the runner's child: collect it (killed first if it is still busy)."""
        pid = self._pid.value
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG) == (0, 0):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)


def _reported_pid(data: bytes) -> int | None:
    for line in data.splitlines():
        if line.startswith(b"pid "):
            with contextlib.suppress(ValueError):
                return int(line[4:])
    return None


def _kill_group(pid: int) -> None:
    """SIGKILL the command's process group, which the child made with its own pid (never our
    own group: the sandbox CLI runs commands without a session of their own)."""
    if pid <= 1 or pid == os.getpgrp():
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def degraded(abi: int) -> list[str]:
    """What the diagnosis should say when commands cannot be reaped completely."""
    if abi >= SCOPED_SIGNALS_ABI:
        return []
    return [
        f"Landlock ABI {abi} < {SCOPED_SIGNALS_ABI}: only a command's process group is killed "
        "when it ends or the runner dies, so processes it moves to a new session (setsid) "
        "outlive it"
    ]
