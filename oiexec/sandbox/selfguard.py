"""Keep the runner's own secrets out of reach of the commands it starts.

The runner holds the provider key (and whatever secret-looking variables it inherited). A
command is denied them in its own environment (`tools/shell_env.py`), but there are other
routes to the runner itself:

* `/proc/<runner>/environ` shows the environment block the runner was *started* with; it is
  kernel memory of the process, not `os.environ`, so removing a variable from `os.environ`
  does not hide it. We overwrite the values of secret variables in that block in place.
* `/proc/<runner>/mem`, `process_vm_readv`, `ptrace` read the Python heap (where the key
  lives as a string). Marking the runner non-dumpable makes every such access need
  CAP_SYS_PTRACE, which sandboxed commands never have (capabilities are dropped, the
  seccomp filter refuses ptrace and process_vm_*), even when they run as the same uid.

bwrap additionally hides the runner behind a PID namespace; Landlock cannot, which is why
these process-level guards exist.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterable

from oiexec.core.redact import looks_secret

_PR_SET_DUMPABLE = 4
_PR_GET_DUMPABLE = 3


def protect_runner(extra_names: Iterable[str] = ()) -> list[str]:
    """Make this process non-dumpable and blank, in its initial environment block, the values
    of secret-looking variables and of `extra_names` (the provider's key variable). Returns
    the names blanked. Linux only; a no-op elsewhere."""
    if not os.path.exists("/proc/self/environ"):
        return []
    blanked = _scrub_environ_block({n.upper() for n in extra_names if n})
    set_non_dumpable()
    return blanked


def set_non_dumpable() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


def is_dumpable() -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    return bool(libc.prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0))


def _env_bounds() -> tuple[int, int] | None:
    """(env_start, env_end) from /proc/self/stat: where the kernel reads `environ` from."""
    try:
        with open("/proc/self/stat", "rb") as stat:
            raw = stat.read()
    except OSError:
        return None
    # Fields after the command name (which may contain spaces) start at field 3.
    fields = raw.rsplit(b")", 1)[1].split()
    # env_start and env_end are fields 50 and 51 (1-based) of proc(5).
    if len(fields) < 49:
        return None
    return int(fields[47]), int(fields[48])


def _scrub_environ_block(names: set[str]) -> list[str]:
    bounds = _env_bounds()
    if bounds is None:
        return []
    start, end = bounds
    blanked: list[str] = []
    try:
        with open("/proc/self/mem", "r+b", buffering=0) as mem:
            mem.seek(start)
            block = mem.read(end - start)
            offset = 0
            for entry in block.split(b"\0"):
                name, sep, value = entry.partition(b"=")
                decoded = name.decode(errors="replace")
                if sep and value and _is_secret(decoded, names):
                    # Zero bytes end the C string right after `NAME=`: the kernel shows an
                    # empty value, and a program inheriting this block sees an empty one.
                    mem.seek(start + offset + len(name) + 1)
                    mem.write(b"\0" * len(value))
                    blanked.append(decoded)
                offset += len(entry) + 1
    except OSError:
        return blanked
    return blanked


def _is_secret(name: str, names: set[str]) -> bool:
    return name.upper() in names or looks_secret(name)
