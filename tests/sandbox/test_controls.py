"""Controls: the escape probes do succeed without a sandbox, so a blocked probe means the
sandbox blocked it (not that the probe was broken)."""

from __future__ import annotations

import socket
import subprocess

from tests.sandbox.conftest import PYTHON, Box

FULL = "danger-full-access"


def test_probes_succeed_in_danger_full_access(
    box: Box, udp_listener: socket.socket, tcp_listener: socket.socket
) -> None:
    victim = subprocess.Popen(box.as_me(["sleep", "60"]))
    udp_port = udp_listener.getsockname()[1]
    tcp_port = tcp_listener.getsockname()[1]
    udp = (
        "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
        f"s.sendto(b'leak', ('127.0.0.1', {udp_port}))"
    )
    tcp = f"import socket; socket.create_connection(('127.0.0.1', {tcp_port}), timeout=2)"
    script = (
        f"echo pwned > {box.outside}/x; echo y >> .git/config; mkdir .openinterpreter; "
        f'{PYTHON} -c "{udp}"; {PYTHON} -c "{tcp}"; kill -9 {victim.pid}'
    )
    try:
        result = box.run(FULL, script, backend="bwrap")
        assert victim.wait(timeout=5) == -9, result.stderr
    finally:
        victim.kill()
    assert (box.outside / "x").exists()
    assert (box.ws / ".git" / "config").read_text().endswith("y\n")
    assert (box.ws / ".openinterpreter").is_dir()
    assert udp_listener.recvfrom(64)[0] == b"leak"
    tcp_listener.accept()[0].close()
