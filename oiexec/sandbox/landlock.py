"""Landlock (ABI >= 2) through ctypes: the ruleset is built in the parent, the child only
restricts itself (plus no_new_privs, dropping every capability (`privileges.py`) and the
seccomp filter) in `preexec_fn`.

Landlock rules only grant access, so protected names under a writable root cannot be kept
read-only; `tripwire.py` guards them instead.
"""

from __future__ import annotations

import copy
import ctypes
import os
from collections.abc import Callable
from pathlib import Path

from oiexec.sandbox import fault_switches, privileges

_SYS_CREATE_RULESET = 444  # same number on x86_64 and aarch64 (asm-generic)
_SYS_ADD_RULE = 445
_SYS_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2

# LANDLOCK_ACCESS_FS_*: everything that changes the file system (reads stay unhandled).
WRITE_FILE = 1 << 1
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5
_WRITE_ABI1 = (
    WRITE_FILE
    | REMOVE_DIR
    | REMOVE_FILE
    | MAKE_CHAR
    | MAKE_DIR
    | MAKE_REG
    | MAKE_SOCK
    | MAKE_FIFO
    | MAKE_BLOCK
    | MAKE_SYM
)
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.restype = ctypes.c_int


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1  # the kernel struct is __attribute__((packed)): 12 bytes
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class LandlockError(OSError):
    pass


def abi_version() -> int:
    """The kernel's Landlock ABI, or 0 when Landlock is missing or disabled."""
    faults = fault_switches.faults()
    if "no-landlock" in faults:
        return 0
    version = _libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION)
    if "landlock-abi-5" in faults:
        version = min(version, 5)
    return max(int(version), 0)


def attr_size(abi: int) -> int:
    """Bytes of `landlock_ruleset_attr` the kernel expects for this ABI."""
    return 8 if abi < 4 else 16 if abi < 6 else 24


def write_access(abi: int) -> int:
    access = _WRITE_ABI1 | REFER
    if abi >= 3:
        access |= TRUNCATE
    return access


def handled_access(abi: int) -> int:
    """Everything the ruleset restricts: writes, plus (ABI 5) ioctls on devices opened by the
    command, so a device reachable for reading cannot be driven through ioctl either."""
    return write_access(abi) | (IOCTL_DEV if abi >= 5 else 0)


def root_access(abi: int) -> int:
    """What a writable root grants: every write except making device nodes. MAKE_CHAR and
    MAKE_BLOCK are handled but granted nowhere, so `mknod` of a device fails everywhere, even
    for a root runner whose node would otherwise open the host's disks from the workspace."""
    return write_access(abi) & ~(MAKE_CHAR | MAKE_BLOCK)


def device_access(abi: int) -> int:
    """What the harmless /dev nodes grant (file-only rights, valid on a non-directory)."""
    return WRITE_FILE | (TRUNCATE if abi >= 3 else 0) | (IOCTL_DEV if abi >= 5 else 0)


#: Device nodes a command may write (and, from ABI 5, ioctl): the data sinks and sources tools
#: expect, and terminals. Nothing else in /dev: no raw disks, /dev/kmsg, /dev/kvm, /dev/fuse.
DEVICE_NODES = (
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
)
#: Device trees granted the same: pseudo-terminals made through /dev/ptmx appear here.
DEVICE_TREES = ("/dev/pts",)


class Ruleset:
    """A ruleset fd granting writes only beneath `writable`, plus writes to a few harmless
    device nodes (`DEVICE_NODES`, `DEVICE_TREES`)."""

    def __init__(self, writable: list[Path], *, abi: int, network_disabled: bool) -> None:
        if abi < 2:
            raise LandlockError(0, f"Landlock ABI {abi} is too old (need 2 or newer)")
        self.abi = abi
        attr = _RulesetAttr(handled_access(abi), 0, 0)
        if abi >= 4 and network_disabled:
            attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP
        if abi >= 6:
            attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        fd = _libc.syscall(
            _SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(attr_size(abi)), 0
        )
        if fd < 0:
            raise _error("landlock_create_ruleset")
        self.fd = int(fd)
        for root in writable:
            self._allow(root, root_access(abi))
        # Not all of /dev: as root the block devices there are the host's disks, and
        # /dev/kmsg, /dev/kvm and the like are kernel interfaces, not files.
        for node in (*DEVICE_NODES, *DEVICE_TREES):
            self._allow(Path(node), device_access(abi))

    def _allow(self, path: Path, access: int) -> None:
        try:
            parent = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return
        try:
            rule = _PathBeneath(access, parent)
            rc = _libc.syscall(_SYS_ADD_RULE, self.fd, _RULE_PATH_BENEATH, ctypes.byref(rule), 0)
            if rc < 0:
                raise _error(f"landlock_add_rule({path})")
        finally:
            os.close(parent)

    def close(self) -> None:
        os.close(self.fd)


class AbstractSocketScope:
    """A ruleset that restricts nothing but abstract Unix sockets (ABI >= 6), for the bwrap
    backend: with the network on, bwrap shares the host's network namespace and with it the
    abstract socket namespace (X11's `@/tmp/.X11-unix/X0`, D-Bus, container runtime shims).
    No file access is handled, so the domain does not stop bwrap's mounts either.

    Calling it (in the wrapper's `preexec_fn`, before bwrap) puts the wrapper, bwrap and the
    command in a domain that may connect only to abstract sockets made inside it. A runner
    that is not root needs no_new_privs for that; root has CAP_SYS_ADMIN instead.
    """

    def __init__(self, abi: int) -> None:
        if abi < 6:
            raise LandlockError(0, f"Landlock ABI {abi} cannot scope abstract sockets (need 6)")
        attr = _RulesetAttr(0, 0, SCOPE_ABSTRACT_UNIX_SOCKET)
        fd = _libc.syscall(
            _SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(attr_size(abi)), 0
        )
        if fd < 0:
            raise _error("landlock_create_ruleset(scope)")
        self.fd = int(fd)
        self._no_new_privs = os.geteuid() != 0

    def __call__(self) -> None:
        if self._no_new_privs and _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise _error("prctl(NO_NEW_PRIVS)")
        if _libc.syscall(_SYS_RESTRICT_SELF, self.fd, 0) != 0:
            raise _error("landlock_restrict_self(scope)")

    def close(self) -> None:
        os.close(self.fd)


def _error(what: str) -> LandlockError:
    err = ctypes.get_errno()
    return LandlockError(err, f"{what}: {os.strerror(err)}")


class ChildRestrictor:
    """The `preexec_fn`: no_new_privs, Landlock, then seccomp. Everything is allocated here,
    in the parent, so the forked child only makes syscalls.

    `bind` adds one command's steps (the backend prepares them in the parent): `sentinel`
    runs inside the first Landlock domain, after which the child restricts itself again so
    the command lives in a domain nested in the sentinel's (see `reaper.py`); `limits` sets
    rlimits and joins a cgroup; `started` is the last step before exec.
    """

    def __init__(self, ruleset: Ruleset, program: bytes) -> None:
        self._ruleset_fd = ruleset.fd
        self._buffer = ctypes.create_string_buffer(program, len(program))
        self._fprog = _SockFprog(len(program) // 8, ctypes.addressof(self._buffer))
        self._sentinel: Callable[[], None] | None = None
        self._limits: Callable[[], None] | None = None
        self._started: Callable[[], None] | None = None

    def bind(
        self,
        *,
        sentinel: Callable[[], None] | None = None,
        limits: Callable[[], None] | None = None,
        started: Callable[[], None] | None = None,
    ) -> ChildRestrictor:
        """A copy for one command (sharing the ruleset and filter) with its own steps."""
        bound = copy.copy(self)
        bound._sentinel, bound._limits, bound._started = sentinel, limits, started
        return bound

    def __call__(self) -> None:
        if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise _error("prctl(NO_NEW_PRIVS)")
        privileges.drop_capabilities()
        if _libc.syscall(_SYS_RESTRICT_SELF, self._ruleset_fd, 0) != 0:
            raise _error("landlock_restrict_self")
        if self._sentinel is not None:
            self._sentinel()
            # The same rules again, as a nested domain: scoped signals then go from the
            # sentinel to the command, never from the command to the sentinel.
            if _libc.syscall(_SYS_RESTRICT_SELF, self._ruleset_fd, 0) != 0:
                raise _error("landlock_restrict_self (nested)")
        if self._limits is not None:
            self._limits()
        if _libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(self._fprog), 0, 0):
            raise _error("prctl(SECCOMP)")
        if self._started is not None:
            self._started()
