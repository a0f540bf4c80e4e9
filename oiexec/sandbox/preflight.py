"""Find out, by running, which backend works on this host. Cached once per process.

Probes run the real bwrap flags on /bin/true (reading `--json-status-fd` rather than matching
error text), ask the kernel for its Landlock ABI, and read a few facts (AppArmor userns
restriction, user namespace limit, container markers) to suggest a fix.

Test hooks (environment, honoured only with `OIEXEC_SANDBOX_TEST_HOOKS=1`; set without it they
are refused, see `fault_switches.py`): `OI_SANDBOX_BWRAP=/path` uses that bwrap;
`OI_SANDBOX_FAULTS=no-userns,no-proc,no-netns,no-landlock` simulates those host failures
(`no-netns`: bwrap cannot set up a network namespace, as under Ubuntu's AppArmor userns
restriction, so the fallback without one is used). Users choose
a backend with `sandbox_backend`, not with the environment.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oiexec.sandbox import fault_switches, landlock, profiles, seccomp
from oiexec.sandbox.bwrap import BwrapFeatures, find_bwrap, proc_readonly_args

_SIMULATED_USERNS = "bwrap: No permissions to create new namespace (simulated: no-userns)"
_SIMULATED_PROC = "bwrap: Can't mount proc on /newroot/proc: Operation not permitted (simulated)"
_SIMULATED_NETNS = "bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted (simulated)"


@dataclass
class Preflight:
    platform: str
    arch: str | None = None
    bwrap_path: str | None = None
    bwrap: BwrapFeatures | None = None
    #: stderr of the first (fullest) bwrap probe that failed, shown in the diagnosis.
    bwrap_error: str | None = None
    landlock_abi: int = 0
    landlock_error: str | None = None
    seatbelt: bool = False
    context: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "platform": self.platform,
            "arch": self.arch,
            "bwrap_path": self.bwrap_path,
            "bwrap_works": self.bwrap is not None,
            "bwrap_dropped": list(self.bwrap.dropped) if self.bwrap else [],
            "bwrap_error": self.bwrap_error,
            "landlock_abi": self.landlock_abi,
            "landlock_error": self.landlock_error,
            "seatbelt": self.seatbelt,
            "context": self.context,
        }


_cache: dict[tuple[str | None, ...], Preflight] = {}
_lock = threading.Lock()


def run_preflight(writable_roots: list[Path] | None = None) -> Preflight:
    """The cached preflight for the current environment switches."""
    bwrap_path = find_bwrap(writable_roots or []) if sys.platform == "linux" else None
    key = (bwrap_path, ",".join(sorted(fault_switches.faults())))
    with _lock:
        if key not in _cache:
            _cache[key] = _probe(bwrap_path)
        return _cache[key]


def clear_cache() -> None:
    with _lock:
        _cache.clear()


def _probe(bwrap_path: str | None) -> Preflight:
    result = Preflight(platform=sys.platform)
    if sys.platform == "darwin":
        result.seatbelt = os.access("/usr/bin/sandbox-exec", os.X_OK)
        return result
    if sys.platform != "linux":
        return result
    try:
        result.arch = seccomp.native_arch()
    except seccomp.UnsupportedArch as exc:
        result.bwrap_error = result.landlock_error = str(exc)
        return result
    result.context = _context()
    result.bwrap_path = bwrap_path
    if bwrap_path is None:
        result.bwrap_error = "bwrap (bubblewrap) was not found outside the writable roots"
    else:
        result.bwrap, result.bwrap_error = _probe_bwrap(bwrap_path)
    result.landlock_abi, result.landlock_error = _probe_landlock()
    return result


def _probe_bwrap(path: str) -> tuple[BwrapFeatures | None, str | None]:
    data = profiles.load("linux/bwrap.toml")
    program = seccomp.build_filter(network_disabled=True, read_only=True, deny_chown=True)
    first_error: str | None = None
    for variant in data["preflight"]:
        dropped = tuple(str(f) for f in variant["drop"])
        ok, error = _try_bwrap(path, data, dropped, program)
        if ok:
            return BwrapFeatures(path=path, dropped=dropped), first_error
        first_error = first_error or error
    return None, first_error


def _try_bwrap(
    path: str, data: dict[str, Any], dropped: tuple[str, ...], program: bytes
) -> tuple[bool, str]:
    injected = fault_switches.faults()
    if "no-userns" in injected:
        return False, _SIMULATED_USERNS
    if "no-proc" in injected and "--proc" not in dropped:
        return False, _SIMULATED_PROC
    if "no-netns" in injected and "--unshare-net" not in dropped:
        return False, _SIMULATED_NETNS
    status_fd = os.memfd_create("oiexec-preflight", os.MFD_CLOEXEC)
    seccomp_fd = seccomp.filter_fd(program)
    args = [path, *data["base_flags"], *(f for f in data["optional_flags"] if f not in dropped)]
    args += ["--ro-bind", "/", "/", "--dev", "/dev"]
    # The read-only re-binds of /proc are part of the real flags: if they fail, so does --proc.
    args += [] if "--proc" in dropped else ["--proc", "/proc", *proc_readonly_args()]
    args += [f for f in data["network_off_flags"] if f not in dropped]
    args += ["--json-status-fd", str(status_fd), "--seccomp", str(seccomp_fd), "--", "/bin/true"]
    try:
        proc = subprocess.run(
            args,
            pass_fds=(status_fd, seccomp_fd),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=20,
            check=False,
        )
        os.lseek(status_fd, 0, os.SEEK_SET)
        status = os.read(status_fd, 65536).decode(errors="replace")
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"{path}: {exc}"
    finally:
        for fd in (status_fd, seccomp_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
    if '"exit-code": 0' in status.replace('"exit-code":0', '"exit-code": 0'):
        return True, ""
    stderr = proc.stderr.decode(errors="replace").strip()
    return False, stderr or f"bwrap exited with status {proc.returncode}"


def _probe_landlock() -> tuple[int, str | None]:
    abi = landlock.abi_version()
    if abi == 0:
        return 0, "the kernel has no Landlock (or it is not in the `lsm=` boot list)"
    if abi < 2:
        return abi, f"Landlock ABI {abi} is too old (need 2 or newer)"
    try:
        landlock.Ruleset([], abi=abi, network_disabled=True).close()
    except OSError as exc:
        return 0, f"cannot create a Landlock ruleset: {exc}"
    return abi, None


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _context() -> dict[str, Any]:
    return {
        "apparmor_restrict_unprivileged_userns": _read(
            "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"
        ),
        "max_user_namespaces": _read("/proc/sys/user/max_user_namespaces"),
        "container": os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv"),
        "euid": os.geteuid(),
    }
