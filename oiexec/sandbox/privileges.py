"""Give up every capability in the sandboxed child of the Landlock backend.

bwrap drops capabilities itself (`--cap-drop ALL`, inside its own user namespace). The Landlock
backend runs commands in the runner's user namespace, so a root runner's commands would keep
all of root's capabilities, and Landlock does not stop what they allow: raw device access,
`mknod` of devices, `bpf()`, chown/chmod of any file, ptrace of host processes. Landlock's
file rules are the only thing between such a command and the host, so the command must be an
ordinary uid 0 without privilege.

As root (CAP_SETPCAP present) the child, in this order:
1. locks the securebits so uid 0 never regains capabilities through exec or setuid
   (SECBIT_NOROOT, NO_SETUID_FIXUP, KEEP_CAPS off, NO_CAP_AMBIENT_RAISE, each locked);
   this needs CAP_SETPCAP, so it comes first;
2. empties the bounding set (also needs CAP_SETPCAP);
3. clears the ambient set and sets effective, permitted and inheritable to zero.
Without CAP_SETPCAP (an ordinary runner) only step 3 applies: there is nothing to lock, and
with no_new_privs set and permitted empty, exec cannot grant anything, so the bounding set,
which such a process cannot shrink, is left as it is.

Everything is allocated at import, in the parent; the forked child only makes syscalls.
"""

from __future__ import annotations

import ctypes
import os

_PR_CAPBSET_DROP = 24
_PR_SET_SECUREBITS = 28
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAP_SETPCAP = 8
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
_EINVAL = 22

SECBIT_NOROOT = 1 << 0
SECBIT_NOROOT_LOCKED = 1 << 1
SECBIT_NO_SETUID_FIXUP = 1 << 2
SECBIT_NO_SETUID_FIXUP_LOCKED = 1 << 3
SECBIT_KEEP_CAPS_LOCKED = 1 << 5  # with SECBIT_KEEP_CAPS (1 << 4) clear: locked off
SECBIT_NO_CAP_AMBIENT_RAISE = 1 << 6
SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED = 1 << 7
LOCKED_SECUREBITS = (
    SECBIT_NOROOT
    | SECBIT_NOROOT_LOCKED
    | SECBIT_NO_SETUID_FIXUP
    | SECBIT_NO_SETUID_FIXUP_LOCKED
    | SECBIT_KEEP_CAPS_LOCKED
    | SECBIT_NO_CAP_AMBIENT_RAISE
    | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED
)

_libc = ctypes.CDLL(None, use_errno=True)
_libc.prctl.restype = ctypes.c_int
_libc.capget.restype = ctypes.c_int
_libc.capset.restype = ctypes.c_int


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


_CapSets = _CapData * 2  # version 3: two 32-bit words per set


class PrivilegeError(OSError):
    pass


def last_cap() -> int:
    """The highest capability number this kernel knows (CAP_CHECKPOINT_RESTORE = 40 on 6.x)."""
    try:
        with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        # /proc masked: try every number a 64-bit set can hold; the kernel answers EINVAL
        # for the ones it does not know, which `drop_capabilities` treats as the end.
        return 63


def _error(what: str) -> PrivilegeError:
    err = ctypes.get_errno()
    return PrivilegeError(err, f"{what}: {os.strerror(err)}")


class _Dropper:
    """Pre-built structures and the capability range; `__call__` runs in the forked child."""

    def __init__(self) -> None:
        self._last = last_cap()
        self._header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
        self._current = _CapSets()
        self._zero = _CapSets()
        self._caps = tuple(range(self._last + 1))

    def _read(self) -> tuple[int, int]:
        """(effective, permitted) of this process as 64-bit masks."""
        self._header.version = _LINUX_CAPABILITY_VERSION_3
        if _libc.capget(ctypes.byref(self._header), self._current) != 0:
            raise _error("capget")
        low, high = self._current
        return low.effective | high.effective << 32, low.permitted | high.permitted << 32

    def __call__(self) -> None:
        effective, permitted = self._read()
        setpcap = 1 << _CAP_SETPCAP
        if permitted & setpcap:
            if not effective & setpcap:
                # Permitted but not effective: raise it (allowed) so the locks below work.
                self._current[0].effective |= setpcap
                self._header.version = _LINUX_CAPABILITY_VERSION_3
                if _libc.capset(ctypes.byref(self._header), self._current) != 0:
                    raise _error("capset(CAP_SETPCAP)")
            if _libc.prctl(_PR_SET_SECUREBITS, LOCKED_SECUREBITS, 0, 0, 0) != 0:
                raise _error("prctl(PR_SET_SECUREBITS)")
            for cap in self._caps:
                if _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                    if ctypes.get_errno() == _EINVAL and self._last == 63:  # past the end
                        break
                    raise _error(f"prctl(PR_CAPBSET_DROP, {cap})")
        # Kernels before 4.3 have no ambient set (EINVAL); nothing to clear there.
        cleared = _libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) == 0
        if not cleared and ctypes.get_errno() != _EINVAL:
            raise _error("prctl(PR_CAP_AMBIENT_CLEAR_ALL)")
        self._header.version = _LINUX_CAPABILITY_VERSION_3
        if _libc.capset(ctypes.byref(self._header), self._zero) != 0:
            raise _error("capset(0)")
        if self._read() != (0, 0):
            raise PrivilegeError(1, "capabilities are still present after capset(0)")


#: Call in the child after no_new_privs and before Landlock and seccomp (which need no
#: capability once no_new_privs is set).
drop_capabilities = _Dropper()
