"""The network allowlist of a bwrap sandbox: what it adds to each command, and who refuses it.

With `allowed_domains`, the sandbox keeps its own network namespace (loopback only) and gets
one way out: the runner's proxy (netproxy.py) on a Unix socket in a private run directory,
bound in read-only, reached through the bridge (netbridge.py) that runs in front of the
command and sets the proxy variables. The proxy starts with the first command and stops when
the sandbox closes. A backend that cannot give commands a network namespace of their own
(Landlock, bwrap where `--unshare-net` fails, macOS) refuses the allowlist: ignoring it would
open the whole network.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from oiexec.core import rundirs
from oiexec.core.errors import ConfigError
from oiexec.core.hostrules import HostAllowlist
from oiexec.core.policy import SandboxPolicy
from oiexec.sandbox.netproxy import Denial, NetProxy

PREFIX = "oiexec-net-"
_SOCKET = "proxy.sock"
#: sun_path holds 108 bytes, the final NUL included.
_MAX_SOCKET_PATH = 107
_BRIDGE = Path(__file__).resolve().with_name("netbridge.py")


def _python() -> str:
    """The runner's interpreter, unless it lies where the sandbox has a private directory
    (/tmp, $TMPDIR): then the system's."""
    python = Path(os.path.realpath(sys.executable))
    private = [Path("/tmp"), *([Path(os.environ["TMPDIR"])] if os.environ.get("TMPDIR") else [])]
    if not any(python.is_relative_to(os.path.realpath(p)) for p in private):
        return str(python)
    for fallback in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(fallback, os.X_OK):
            return fallback
    return str(python)


@functools.cache
def _bridge_source() -> str:
    return _BRIDGE.read_text(encoding="utf-8")


DenialListener = Callable[[Denial], None]


def refuse_unisolated(policy: SandboxPolicy, backend: str, netns: bool) -> None:
    """A `ConfigError` when `backend` cannot hold commands to the allowlist."""
    if not policy.network_allowlist or (backend in ("bwrap", "unavailable") and netns):
        return
    why = {
        "landlock": "Landlock can limit TCP ports, not hosts, and cannot give commands a "
        "network of their own",
        "bwrap": "bwrap cannot create a network namespace here (the preflight dropped "
        "--unshare-net)",
        "seatbelt": "the macOS sandbox here does not route commands through a proxy",
    }.get(backend, f"the `{backend}` backend cannot route commands through a proxy")
    raise ConfigError(
        "[sandbox_workspace_write] allowed_domains cannot be enforced: " + why,
        hint="Use bwrap with network namespaces (`interpreter sandbox doctor` says what is "
        "missing), or remove allowed_domains (network_access = false keeps the network off).",
    )


class NetGate:
    """The allowlist proxy of one sandbox, and what each command needs to use it."""

    def __init__(self, policy: SandboxPolicy) -> None:
        self._allowlist = HostAllowlist(policy.allowed_domains)
        self._dir: Path | None = None
        self._proxy: NetProxy | None = None
        #: Told of each denial, from the thread that ends a command (`flush`).
        self.listener: DenialListener | None = None
        self.denied = 0
        self._lock = threading.Lock()

    def _start(self) -> NetProxy:
        if self._proxy is None:
            self._dir = rundirs.make(PREFIX)
            path = self._dir / _SOCKET
            if len(os.fsencode(path)) > _MAX_SOCKET_PATH:
                raise ConfigError(
                    f"the network allowlist's socket path is too long ({path})",
                    hint="Set TMPDIR to a shorter directory.",
                )
            self._proxy = NetProxy(self._allowlist, path)
        return self._proxy

    def mount_args(self) -> list[str]:
        """Bind the socket's directory in, read-only (commands cannot replace the socket)."""
        self._start()
        assert self._dir is not None
        return ["--ro-bind", str(self._dir), str(self._dir)]

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv` behind the bridge, run by the runner's own interpreter (isolated mode).
        Its source goes on the command line: the package may lie where the sandbox has a
        private /tmp, and a file of it could be changed by a command between runs."""
        proxy = self._start()
        return [_python(), "-I", "-S", "-c", _bridge_source(), str(proxy.path), "--", *argv]

    def flush(self) -> list[str]:
        """Report denials since the last call to the listener; notes for the model."""
        if self._proxy is None:
            return []
        notes = []
        with self._lock:  # commands end on the tool threads, the run on its own
            denials, more = self._proxy.take_denials()
            self.denied += len(denials) + more
        for denial in denials:
            if self.listener is not None:
                self.listener(denial)
            notes.append(
                f"network: the sandbox's proxy refused {denial.target()}: not in allowed_domains"
            )
        if more:
            notes.append(f"network: the sandbox's proxy refused {more} more request(s)")
        return notes

    def close(self) -> None:
        if self._proxy is not None:
            self._proxy.close()
            self.flush()
            self._proxy = None
        if self._dir is not None:
            rundirs.remove(self._dir)
            self._dir = None
