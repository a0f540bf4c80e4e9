"""The escape suite through a full `interpreter exec`, run as an unprivileged user, with a
scripted model that tries every escape by shell and by patch. Each backend, each mode; and
the same writes succeed where the mode allows them, so nothing passes by blocking all."""

from __future__ import annotations

import os
import socket

import pytest

from tests.sandbox.conftest import BACKENDS, PYTHON, Box, snapshot_tree
from tests.sandbox.support import run_exec
from tests.support.model_server import ModelServer, apply_patch_call, call, reply, tool_outputs


def _escape_script(box: Box, tcp_port: int, udp_port: int) -> str:
    target = box.outside / "escaped.txt"
    py_net = (
        f"import socket\ns=socket.socket(); s.settimeout(1); s.connect(('127.0.0.1',{tcp_port}))\n"
    )
    py_udp = (
        "import socket\n"
        f"socket.socket(socket.AF_INET,socket.SOCK_DGRAM).sendto(b'x',('127.0.0.1',{udp_port}))\n"
    )
    return "; ".join(
        [
            f"echo out > {target}",
            "echo hook > .git/hooks/pre-commit",
            "echo '[core]' >> .git/config",
            "mkdir .openinterpreter",
            f"ln -s {box.outside} link && echo via-link > link/linked.txt",
            f'{PYTHON} -c "{py_net}"',
            f'{PYTHON} -c "{py_udp}"',
            "unshare -Ur true && echo UNSHARED",
            "echo inside > inside.txt",
            "echo tmp > /tmp/oi-exec-escape-$$.txt && rm /tmp/oi-exec-escape-$$.txt && echo TMP_OK",
            "true",
        ]
    )


_PATCH_INTO_HOOKS = (
    "*** Begin Patch\n*** Add File: .git/hooks/post-checkout\n+#!/bin/sh\n+echo pwned\n"
    "*** End Patch\n"
)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ["read-only", "workspace-write"])
def test_exec_escapes_are_blocked(
    box: Box,
    model_server: ModelServer,
    tcp_listener: socket.socket,
    udp_listener: socket.socket,
    backend: str,
    mode: str,
) -> None:
    git_before = snapshot_tree(box.ws / ".git")
    outside_before = snapshot_tree(box.outside)
    script = _escape_script(box, tcp_listener.getsockname()[1], udp_listener.getsockname()[1])
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": script, "yield_time_ms": 20000})]),
        reply(tool_calls=[apply_patch_call(_PATCH_INTO_HOOKS)]),
        reply("tried everything"),
    )
    result = run_exec(box, model_server, mode, backend)
    assert result["code"] == 0, result["stderr"]

    assert snapshot_tree(box.ws / ".git") == git_before
    assert snapshot_tree(box.outside) == outside_before
    assert not (box.ws / ".openinterpreter").exists()
    with pytest.raises(TimeoutError):
        tcp_listener.accept()
    with pytest.raises(TimeoutError):
        udp_listener.recvfrom(16)
    [output, patch_output] = list(tool_outputs(model_server.bodies[-1]).values())
    assert "UNSHARED" not in output
    assert patch_output.startswith("apply_patch rejected") or "rejected" in patch_output
    # What the mode allows still works: workspace and /tmp writes in workspace-write only.
    if mode == "workspace-write":
        assert (box.ws / "inside.txt").read_text() == "inside\n"
        assert "TMP_OK" in output
    else:
        assert not (box.ws / "inside.txt").exists()
        assert "TMP_OK" not in output


def test_same_script_escapes_without_a_sandbox(
    box: Box, model_server: ModelServer, tcp_listener: socket.socket, udp_listener: socket.socket
) -> None:
    """The control: with danger-full-access the escapes do land (so the suite can fail)."""
    script = _escape_script(box, tcp_listener.getsockname()[1], udp_listener.getsockname()[1])
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": script, "yield_time_ms": 20000})]),
        reply("done"),
    )
    result = run_exec(box, model_server, "danger-full-access", "bwrap")
    assert result["code"] == 0, result["stderr"]
    assert (box.outside / "escaped.txt").exists()
    assert (box.ws / ".git" / "hooks" / "pre-commit").read_text() == "hook\n"
    conn, _ = tcp_listener.accept()
    conn.close()
    assert udp_listener.recvfrom(16)[0] == b"x"
    os.remove(box.ws / "inside.txt")
