"""Resource limits of sandboxed commands (`SandboxPolicy.limits`): processes, file size, CPU.

Set in the child before exec, so the command and everything it starts inherit them. For bwrap
they go on the wrapper shell, so bwrap inherits them as well, and where shell builtins can say
them (`CommandLimits.shell_steps`) the wrapper sets them itself: then nothing runs in the child
before exec and the runner can vfork instead of forking the whole interpreter.

* File size (RLIMIT_FSIZE) and CPU seconds (RLIMIT_CPU) work the same for every user.
* Processes: RLIMIT_NPROC counts every task of the user, not those of the command, and the
  kernel exempts uid 0 of the initial user namespace from it altogether. Measured here: it is
  not enforced for a root runner even inside bwrap's user namespace, since bwrap maps root to
  itself (kuid 0). So:
  - a non-root runner gets RLIMIT_NPROC = (tasks its uid has now) + overhead + the limit;
  - a root runner gets a pids cgroup per command (cgroup v2 with `pids` in the parent's
    `cgroup.subtree_control`, or a writable v1 `pids` hierarchy): made and given its
    `pids.max` by the runner, joined by the child writing to a file the runner opened (the
    child is under Landlock by then and could not open it; v1 `tasks`, see below), removed
    in `after()`, killing anything still listed in it first;
  - a root runner without such a cgroup runs unlimited, and the diagnosis says so.

Cost: moving a process into a cgroup through `cgroup.procs` takes the kernel's cgroup
threadgroup lock for writing, which waits for an RCU grace period unless the hierarchy is
mounted with `favordynmods` (measured on the 2-core test VM under load: median 11.6 ms, up to
22 ms, per command). In v1 the child writes `0` to `tasks` instead, moving only itself, which
needs no such lock (0.04 ms); v2 has no such file, so there each command pays the grace
period. `max_processes = 0` turns the cgroup off.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import resource
import shlex
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

from oiexec.core import rundirs
from oiexec.core.policy import SandboxLimits

_CGROUP_PREFIX = "oiexec-"
#: `ulimit` flags every POSIX sh agrees on (dash, bash, busybox ash).
_ULIMIT_FLAGS = {resource.RLIMIT_FSIZE: "f", resource.RLIMIT_CPU: "t"}
_counter = itertools.count()


def _cap(want: int, current: int) -> int:
    """`want`, but never above a limit the runner already has (it could not raise it)."""
    if current == resource.RLIM_INFINITY:
        return want
    return min(want, current)


def _rlimit(res: int, soft: int, hard: int) -> tuple[int, int, int]:
    _, cur_hard = resource.getrlimit(res)
    new_hard = _cap(hard, cur_hard)
    return res, min(soft, new_hard), new_hard


def own_tasks() -> int:
    """Tasks (processes and threads) of this real uid, what RLIMIT_NPROC counts."""
    uid = os.getuid()
    me = os.getpid()
    # This process may be non-dumpable (selfguard), which makes /proc/<pid> root's: count it
    # directly.
    total = len(os.listdir("/proc/self/task"))
    with os.scandir("/proc") as entries:
        for entry in entries:
            if not entry.name.isdigit() or int(entry.name) == me:
                continue
            try:
                # One stat per process: procfs gives `task/` 2 + (number of threads) links.
                info = os.stat(f"/proc/{entry.name}/task")
            except OSError:
                continue  # exited meanwhile
            if info.st_uid == uid:
                total += max(info.st_nlink - 2, 1)
    return total


def _mountpoints() -> list[tuple[str, str, str]]:
    """(mount point, file system type, super options) of every cgroup mount."""
    found: list[tuple[str, str, str]] = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return found
    for line in lines:
        head, _, tail = line.partition(" - ")
        fields, extra = head.split(), tail.split()
        if len(fields) >= 5 and len(extra) >= 3 and extra[0] in ("cgroup", "cgroup2"):
            found.append((fields[4].replace("\\040", " "), extra[0], extra[2]))
    return found


def _own_cgroups() -> dict[str, str]:
    """Controller list (v1) or "" (v2) -> this process's cgroup path in that hierarchy."""
    paths: dict[str, str] = {}
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as f:
            for line in f.read().splitlines():
                _, controllers, path = line.split(":", 2)
                paths[controllers] = path
    except (OSError, ValueError):
        pass
    return paths


def find_pids_cgroup() -> Path | None:
    """A cgroup directory under which this process may make children limited by `pids.max`:
    its own cgroup, in v2 when `pids` is enabled for children, else in the v1 `pids` tree."""
    own = _own_cgroups()
    for mount, fstype, options in _mountpoints():
        if fstype == "cgroup2" and "" in own:
            parent = Path(mount + own[""].rstrip("/"))
            try:
                enabled = (parent / "cgroup.subtree_control").read_text().split()
            except OSError:
                continue
            if "pids" in enabled and os.access(parent, os.W_OK):
                return parent
        elif fstype == "cgroup" and "pids" in options.split(","):
            path = next((p for c, p in own.items() if "pids" in c.split(",")), None)
            parent = Path(mount + (path or "/").rstrip("/"))
            if os.access(parent, os.W_OK) and (parent / "cgroup.procs").exists():
                return parent
    return None


class CommandLimits:
    """One command's limits: `apply` in the child, `release` once the command is over."""

    def __init__(
        self,
        rlimits: list[tuple[int, int, int]],
        cgroup: tuple[Path, Path, int] | None = None,
        notes: list[str] | None = None,
        defer: Callable[[Path], None] | None = None,
    ) -> None:
        self._rlimits = rlimits
        self._cgroup: Path | None = cgroup[0] if cgroup else None
        #: The file that moves a process into the cgroup (v1 `tasks`, v2 `cgroup.procs`).
        self._join: Path | None = cgroup[1] if cgroup else None
        self._procs_fd: int | None = cgroup[2] if cgroup else None
        self._notes = notes or []
        self._defer = defer

    def apply(self) -> None:
        """In the child before exec: only syscalls on what the parent prepared."""
        for res, soft, hard in self._rlimits:
            resource.setrlimit(res, (soft, hard))
        if self._procs_fd is not None:
            os.write(self._procs_fd, b"0")  # "0" is the writing process itself

    def shell_steps(self) -> str | None:
        """The same steps as POSIX shell builtins, `&&`-joined, for a wrapper shell that runs
        them before anything else (bwrap's). The runner can then start the wrapper without a
        Python `preexec_fn`, which would make it fork the whole interpreter instead of
        vfork. None when the builtins cannot say it portably: RLIMIT_NPROC is `ulimit -p`
        in dash and `-u` in bash."""
        steps: list[str] = []
        for res, soft, hard in self._rlimits:
            flag = _ULIMIT_FLAGS.get(res)
            if flag is None:
                return None
            # `ulimit -f` counts 512-byte blocks in every POSIX sh (bash too, as `sh`):
            # rounding down keeps the limit at or below what was asked for. Soft first: it
            # is within the current hard limit, and the new hard limit is not below it.
            unit = 512 if res == resource.RLIMIT_FSIZE else 1
            steps += [f"ulimit -S -{flag} {soft // unit}", f"ulimit -H -{flag} {hard // unit}"]
        if self._join is not None:
            # "0" is the writing process, the shell itself (single-threaded). Opened by path
            # (dash cannot name a descriptor above 9), by the wrapper, which runs as the
            # runner and unconfined, before anything else; cgroupfs is the runner's alone.
            steps.append(f"echo 0 > {shlex.quote(str(self._join))}")
        return " && ".join(steps)

    @property
    def has_cgroup(self) -> bool:
        """Whether the command gets a cgroup of its own, which lists every process of it."""
        return self._cgroup is not None

    def is_empty(self) -> bool | None:
        """Whether no process of the command is left (None: no cgroup, nobody can tell)."""
        if self._cgroup is None:
            return None
        return not _cgroup_pids(self._cgroup)

    def release(self, *, kill: bool, report: bool = True) -> list[str]:
        """Remove the command's cgroup (idempotent). With `kill`, whatever is still in it is
        killed first and reported (unless not `report`: the cgroup is then the command's
        reaper, which kills leftovers as a matter of course); without (bwrap, whose PID
        namespace is being torn down as the wrapper exits), a busy cgroup is left to
        `Limiter.sweep`."""
        if self._procs_fd is not None:
            os.close(self._procs_fd)
            self._procs_fd = None
        notes, self._notes = self._notes, []
        cgroup, self._cgroup = self._cgroup, None
        if cgroup is None:
            return notes
        survivors = _empty_cgroup(cgroup) if kill else 0
        try:
            os.rmdir(cgroup)
        except OSError:
            if self._defer is not None:
                self._defer(cgroup)
        if survivors and report:
            notes.append(
                f"sandbox: {survivors} process(es) of the command were still running after it "
                "ended and have been killed"
            )
        return notes


def _cgroup_pids(cgroup: Path) -> list[int]:
    try:
        return [int(p) for p in (cgroup / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _empty_cgroup(cgroup: Path, timeout: float = 2.0) -> int:
    """SIGKILL every task in `cgroup` until none is left (bounded); how many there were."""
    seen: set[int] = set()
    deadline = time.monotonic() + timeout
    while (pids := _cgroup_pids(cgroup)) and time.monotonic() < deadline:
        for pid in pids:
            seen.add(pid)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.002)  # killed tasks leave the list once they have exited
    return len(seen)


def _remove_stale(parent: Path) -> None:
    """Command cgroups left by runners that died (named after them: `rundirs.owner_stamp`).
    What is still in them is killed first: a command of a runner that was SIGKILLed, which
    nothing else ended (Landlock without signal scoping has no reaper to do it)."""
    with contextlib.suppress(OSError), os.scandir(parent) as entries:
        for entry in entries:
            if not entry.name.startswith(_CGROUP_PREFIX):
                continue
            owner = entry.name.removeprefix(_CGROUP_PREFIX)
            if rundirs.owner_gone(owner):
                _empty_cgroup(Path(entry.path))
            elif not owner.split("-")[0].isdigit() or _alive(int(owner.split("-")[0])):
                continue  # (a pid alone: named by an older version, removed only if empty)
            with contextlib.suppress(OSError):
                os.rmdir(entry.path)  # fails while something is still in it: left alone


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _join_file(cgroup: Path) -> str:
    """v1: `tasks`. Moving just the writing thread (the child is single-threaded) skips the
    kernel's global threadgroup lock, whose write side waits for an RCU grace period (about
    12 ms here under load); `cgroup.procs` would take it. v2 has only `cgroup.procs`."""
    return "tasks" if (cgroup / "tasks").exists() else "cgroup.procs"


class Limiter:
    """The policy's limits for one sandbox; `prepare` makes one command's `CommandLimits`.

    The overheads are how many processes of the backend's own count beside the command, so
    the command itself gets the whole `max_processes`: bwrap's wrapper shell, bwrap and its
    PID 1 count in both ways; the Landlock sentinel counts for RLIMIT_NPROC (same uid) but is
    outside the cgroup (spawned before the child joins it).
    """

    def __init__(
        self,
        limits: SandboxLimits,
        *,
        nproc_overhead: int,
        cgroup_overhead: int,
        reap: bool = False,
    ) -> None:
        self._limits = limits
        self._nproc_overhead = nproc_overhead
        self._cgroup_overhead = cgroup_overhead
        self._root = os.geteuid() == 0
        # `reap`: a cgroup per command even without a process limit, because it is the only
        # complete list of a command's processes (Landlock without signal scoping).
        wanted = limits.max_processes is not None or reap
        self._cgroup_parent = find_pids_cgroup() if self._root and wanted else None
        self._join_name: str | None = None
        self._owner: tuple[int, str] | None = None
        #: Command cgroups that were still busy when their command ended (commands end on
        #: several threads, hence the lock).
        self._pending: list[Path] = []
        self._lock = threading.Lock()
        if self._cgroup_parent is not None:
            _remove_stale(self._cgroup_parent)

    def _defer(self, cgroup: Path) -> None:
        with self._lock:
            self._pending.append(cgroup)

    def sweep(self, *, kill: bool = False) -> None:
        """Remove the command cgroups left busy (with `kill`, killing what is still in them)."""
        with self._lock:
            busy, self._pending = self._pending, []
        for cgroup in busy:
            if kill:
                _empty_cgroup(cgroup)
            try:
                os.rmdir(cgroup)
            except FileNotFoundError:
                pass
            except OSError:
                self._defer(cgroup)

    def close(self) -> None:
        """End of run: nothing of any command may stay in a cgroup of ours."""
        self.sweep(kill=True)

    def prepare(self) -> CommandLimits:
        if self._pending:
            self.sweep()
        limits = self._limits
        rlimits: list[tuple[int, int, int]] = []
        if limits.max_file_size is not None:
            size = limits.max_file_size
            rlimits.append(_rlimit(resource.RLIMIT_FSIZE, size, size))
        if limits.max_cpu_seconds is not None:
            cpu = limits.max_cpu_seconds
            # One second between SIGXCPU and SIGKILL, for a process that ignores SIGXCPU.
            rlimits.append(_rlimit(resource.RLIMIT_CPU, cpu, cpu + 1))
        cgroup: tuple[Path, Path, int] | None = None
        notes: list[str] = []
        if limits.max_processes is not None and not self._root:
            allowed = own_tasks() + self._nproc_overhead + limits.max_processes
            rlimits.append(_rlimit(resource.RLIMIT_NPROC, allowed, allowed))
        elif self._cgroup_parent is not None:
            cgroup = self._make_cgroup(self._cgroup_parent, limits.max_processes)
            if cgroup is None:
                notes.append(
                    f"sandbox: max_processes was not enforced for this command (no pids cgroup "
                    f"could be made under {self._cgroup_parent})"
                )
        return CommandLimits(rlimits, cgroup, notes, self._defer)

    def run_cgroups(self) -> tuple[Path, str] | None:
        """Where this runner's command cgroups are made and the prefix of their names (None:
        commands get no cgroup)."""
        if self._cgroup_parent is None:
            return None
        return self._cgroup_parent, f"{_CGROUP_PREFIX}{self._stamp()}-"

    def _stamp(self) -> str:
        """`rundirs.owner_stamp()`, read from /proc once per process (a forked child of the
        runner is another owner)."""
        pid = os.getpid()
        if self._owner is None or self._owner[0] != pid:
            self._owner = (pid, rundirs.owner_stamp())
        return self._owner[1]

    def _make_cgroup(
        self, parent: Path, max_processes: int | None
    ) -> tuple[Path, Path, int] | None:
        """A new cgroup with its `pids.max`, and the file joining it opened for the child."""
        path = parent / f"{_CGROUP_PREFIX}{self._stamp()}-{next(_counter)}"
        try:
            os.mkdir(path)
        except FileExistsError:
            pass  # named after this very process: only it could have made it
        except OSError:
            return None
        try:
            limit = "max" if max_processes is None else str(max_processes + self._cgroup_overhead)
            fd = os.open(path / "pids.max", os.O_WRONLY | os.O_CLOEXEC)
            try:
                os.write(fd, limit.encode())
            finally:
                os.close(fd)
            if self._join_name is None:  # the same in every cgroup of the hierarchy
                self._join_name = _join_file(path)
            join = path / self._join_name
            return path, join, os.open(join, os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            with contextlib.suppress(OSError):
                path.rmdir()
            return None
