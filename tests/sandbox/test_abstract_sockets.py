"""Host abstract Unix sockets with the network on (issue 21).

bwrap with the network on shares the host's network namespace, and with it the abstract socket
namespace (X11's `@/tmp/.X11-unix/X0`, D-Bus, container runtime shims): no path to mask.
Landlock's abstract-socket scope (ABI >= 6) closes it, under bwrap (applied to bwrap itself)
and under the Landlock backend. Where the kernel cannot, doctor must say so. Which of the two
this machine shows is chosen by the probed ABI: the test never passes by default.
"""

from __future__ import annotations

import json
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from oiexec.core.policy import SandboxPolicy
from oiexec.sandbox import landlock
from oiexec.sandbox.bwrap import BwrapFeatures
from oiexec.sandbox.diagnosis import Decision
from oiexec.sandbox.preflight import Preflight
from tests.sandbox.conftest import BACKENDS, PYTHON, Box
from tests.support.model_server import ModelServer, call, reply, tool_outputs

NETWORK_ON = ["-c", "sandbox_workspace_write.network_access=true"]
ABI = landlock.abi_version()
SCOPED = ABI >= 6

#: Connects to the host's listener and to one of its own; prints both outcomes as JSON.
_PROBE = """
import errno, json, socket, sys
out = {}
def attempt(key, name):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(name)
        out[key] = "ok"
    except OSError as exc:
        out[key] = errno.errorcode.get(exc.errno, str(exc.errno))
own = socket.socket(socket.AF_UNIX)
own.bind(b"\\0" + sys.argv[2].encode())
own.listen(1)
attempt("host", b"\\0" + sys.argv[1].encode())
attempt("own", b"\\0" + sys.argv[2].encode())
print("PROBE:" + json.dumps(out))
"""


@pytest.fixture
def host_abstract() -> Iterator[tuple[str, socket.socket]]:
    """An abstract socket listening in the test process, outside every sandbox."""
    name = f"oiexec-test-host-{uuid.uuid4().hex[:10]}"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(b"\0" + name.encode())
    sock.listen(8)
    sock.settimeout(0.2)
    try:
        yield name, sock
    finally:
        sock.close()


def _probe_file(box: Box) -> str:
    path = box.outside / "abstract_probe.py"  # not under /tmp: private to bwrap sandboxes
    path.write_text(_PROBE)
    path.chmod(0o644)
    return str(path)


def _parse(output: str) -> dict[str, str]:
    line = next((ln for ln in output.splitlines() if ln.startswith("PROBE:")), None)
    assert line is not None, f"the probe did not run:\n{output}"
    result: dict[str, str] = json.loads(line.removeprefix("PROBE:"))
    return result


def _doctor(box: Box, backend: str, faults: str = "") -> dict[str, Any]:
    env = {"OI_SANDBOX_FAULTS": faults} if faults else {}
    done = box.cli(["doctor", "--network", "--json"], backend=backend, env=env)
    assert done.stdout.strip(), f"doctor exited {done.returncode}, no report:\n{done.stderr}"
    report: dict[str, Any] = json.loads(done.stdout)
    assert report["backend"] == backend, report
    assert report["network"] == "on"
    return report


def _nothing_connected(listener: socket.socket) -> bool:
    try:
        conn, _ = listener.accept()
    except TimeoutError:
        return True
    conn.close()
    return False


#: (backend, simulated fault): the kernel as it is, and as one without scoping (Linux < 6.12).
CONFIGS = [
    ("bwrap", ""),
    ("landlock", ""),
    ("bwrap", "landlock-abi-5"),
    ("landlock", "landlock-abi-5"),
]


@pytest.mark.parametrize(("backend", "faults"), CONFIGS)
def test_host_abstract_socket_with_the_network_on(
    box: Box,
    model_server: ModelServer,
    host_abstract: tuple[str, socket.socket],
    backend: str,
    faults: str,
) -> None:
    name, listener = host_abstract
    script = f"{PYTHON} {_probe_file(box)} {name} oiexec-test-own-{uuid.uuid4().hex[:8]}"
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": script, "yield_time_ms": 20000})]),
        reply("done"),
    )
    env = {"OI_SANDBOX_FAULTS": faults} if faults else {}
    proc = box.exec(model_server.config_args(), "workspace-write", backend, *NETWORK_ON, env=env)
    assert proc.returncode == 0, proc.stderr
    [output] = tool_outputs(model_server.bodies[-1]).values()
    probe = _parse(output)
    report = _doctor(box, backend, faults)
    claimed = report["enforced"]["abstract_sockets_scoped"]
    missing = [s for s in report["guarantees_missing"] if "abstract Unix sockets" in s]
    assert report["enforced"]["host_sockets_masked"] is (backend == "bwrap")  # pathname only
    # A command's own abstract sockets keep working: the scope is not a blanket refusal.
    assert probe["own"] == "ok", probe
    abi = min(ABI, 5) if faults else ABI
    if abi >= 6:
        assert probe["host"] == "EPERM", probe
        assert _nothing_connected(listener)
        assert claimed is True and not missing, report
    else:
        # Nothing on this kernel closes it: doctor must say so, and name why.
        assert probe["host"] == "ok", probe
        assert not _nothing_connected(listener)
        assert claimed is False, report
        [gap] = missing
        assert ("no Landlock" if abi == 0 else f"ABI {abi}") in gap, gap


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("abi", [0, 5, 6])
def test_doctor_claim_follows_the_abi(backend: str, abi: int) -> None:
    policy = SandboxPolicy(mode="workspace-write", cwd=Path("/"), network_access=True)
    pre = Preflight(platform="linux", bwrap=BwrapFeatures("/usr/bin/bwrap"), landlock_abi=abi)
    decision = Decision(backend, policy, pre)
    assert decision.enforced()["abstract_sockets_scoped"] is (abi >= 6)
    gaps = [s for s in decision.guarantees_missing() if "abstract Unix sockets" in s]
    assert bool(gaps) is (abi < 6)
    assert all(("no Landlock" if abi == 0 else f"ABI {abi}") in gap for gap in gaps)
    # With the network off, bwrap's own network namespace (and the seccomp filter's refusal
    # of Unix sockets under Landlock) close them whatever the ABI.
    off = Decision(backend, SandboxPolicy(mode="workspace-write", cwd=Path("/")), pre)
    assert off.enforced()["abstract_sockets_scoped"] is True
