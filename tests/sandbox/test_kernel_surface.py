"""Kernel-surface escapes: capabilities, raw devices, device nodes, TIOCSTI, bpf, keyrings,
metadata outside the roots, host Unix sockets, ptrace, nested user namespaces.

Every backend x sandboxed mode x runner user runs one command (`kernel_probe.py surface`)
that tries all of them; the test then lists every probe that reached the kernel, and checks
from the host side that nothing arrived (socket listeners, the terminal, the files). The
control runs the same command in danger-full-access, so a blocked probe means the sandbox
blocked it, not that the probe was broken.
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import platform
import shlex
import socket
import stat
import subprocess
import termios
import tty
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.sandbox.conftest import (
    BACKENDS,
    IS_ROOT,
    PYTHON,
    RUNNER_PYTHON,
    SANDBOXED_MODES,
    Box,
    backend_args,
    unprivileged_ids,
)
from tests.support.model_server import ModelServer, call, reply, tool_outputs

PROBE = str(Path(__file__).with_name("kernel_probe.py"))
PROBES = (  # noqa: SIM905 (a word list reads better here)
    "caps loop0_write kmsg_write node_write mknod_blk mknod_chr mkfifo bpf key_read "
    "user_keyring ptrace_child vm_read_child ptrace_parent vm_read_parent unshare_user "
    "unshare_cmd chmod chown utime setxattr unix_path unix_abstract local_ipc tiocsti_stdin "
    "tiocsti_path"
).split()
METADATA = ("chmod", "chown", "utime", "setxattr")
KEY_SPEC_SESSION_KEYRING = -3
KEYCTL_INVALIDATE = 21

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


#: The syscalls the probes call by number, from the uapi headers; kept apart from
#: seccomp.toml so these tests do not trust the data they test.
SYSCALLS = {
    "x86_64": {
        "add_key": 248,
        "keyctl": 250,
        "bpf": 321,
        "ptrace": 101,
        "process_vm_readv": 310,
        "unshare": 272,
    },
    "aarch64": {
        "add_key": 217,
        "keyctl": 219,
        "bpf": 280,
        "ptrace": 117,
        "process_vm_readv": 270,
        "unshare": 97,
    },
}[{"arm64": "aarch64", "amd64": "x86_64"}.get(platform.machine(), platform.machine())]


def _nr(name: str) -> int:
    return SYSCALLS[name]


def reached(result: str) -> bool:
    """The probe got past every check (EFAULT: process_vm_readv passed the access check and
    only missed the address)."""
    return result.startswith("ok") or result == "EFAULT"


@dataclass
class Host:
    """What the test owns outside the sandbox, and how to tell whether a probe got to it."""

    box: Box
    uid: int
    config: dict[str, object] = field(default_factory=dict)
    listeners: list[socket.socket] = field(default_factory=list)
    master: int = -1
    slave: int = -1
    key_id: int = 0
    meta_file: Path = Path()
    meta_before: tuple[int, int, int, list[str]] = (0, 0, 0, [])

    def run(self, mode: str, backend: str | None) -> tuple[dict[str, str], str]:
        cli = [RUNNER_PYTHON, "-m", "oiexec.cli.sandbox_cmd", *backend_args(backend), "-s", mode]
        probe = str(self.box.visible(Path(PROBE)))
        command = [PYTHON, probe, "surface", json.dumps(self.config), *PROBES]
        result = subprocess.run(
            self.box.as_me([*cli, "-C", str(self.box.ws), "--", *command]),
            cwd=self.box.ws,
            env=self.box.env(),
            stdin=self.slave,  # the terminal TIOCSTI would write into
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        lines = result.stdout.strip().splitlines()
        assert lines, f"the probe printed nothing (rc={result.returncode}): {result.stderr}"
        return dict(json.loads(lines[-1])), result.stderr

    def meta(self) -> tuple[int, int, int, list[str]]:
        info = self.meta_file.stat()
        return info.st_mode, info.st_uid, info.st_mtime_ns, os.listxattr(self.meta_file)

    def arrivals(self, *, metadata: bool = True) -> list[str]:
        """What reached the host: connections, terminal input, metadata changes (unless
        `metadata` is False)."""
        found = []
        for listener in self.listeners:
            try:
                listener.accept()[0].close()
                found.append(f"{listener.getsockname()!r} accepted a connection")
            except BlockingIOError:
                pass
        pending = ctypes.c_int(0)
        fcntl.ioctl(self.slave, termios.FIONREAD, pending)
        if pending.value:
            found.append(f"{pending.value} byte(s) injected into the terminal")
        if metadata and self.meta() != self.meta_before:
            found.append(f"metadata of {self.meta_file} changed: {self.meta()}")
        return found


@pytest.fixture
def host(box: Box) -> Iterator[Host]:
    uid, gid = unprivileged_ids() if box.who != "root" else (0, 0)
    tag = uuid.uuid4().hex[:10]
    h = Host(box=box, uid=uid)
    # A file outside every root, owned by the runner, for chmod/chown/utime/setxattr.
    h.meta_file = box.outside / "meta"
    h.meta_file.write_text("x")
    os.chown(h.meta_file, uid, gid)
    h.meta_before = h.meta()
    # A block node of /dev/loop0 (7, 0) outside the roots, opened for writing, never written.
    node = box.outside / "loop-node"
    if IS_ROOT:
        os.mknod(node, stat.S_IFBLK | 0o600, os.makedev(7, 0))
        os.chown(node, uid, gid)
    # Host Unix listeners: a pathname one outside the roots, and an abstract one.
    sock_path = str(box.outside / "host.sock")
    abstract = f"oiexec-test-{tag}"
    for address in (sock_path, "\0" + abstract):
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(address)
        listener.listen(8)
        listener.setblocking(False)
        h.listeners.append(listener)
    os.chmod(sock_path, 0o777)
    # A key in this process's session keyring, which the command inherits.
    h.key_id = int(
        _libc.syscall(
            ctypes.c_long(_nr("add_key")),
            b"user",
            f"oiexec-test-{tag}".encode(),
            b"host-secret",
            ctypes.c_size_t(11),
            ctypes.c_int(KEY_SPEC_SESSION_KEYRING),
        )
    )
    assert h.key_id > 0, os.strerror(ctypes.get_errno())
    # A terminal of the test's own: the command gets it as stdin and by path. Raw mode, so
    # one injected byte is already readable input.
    h.master, h.slave = os.openpty()
    tty.setraw(h.slave)
    tty_path = os.ttyname(h.slave)
    os.chown(tty_path, uid, -1)
    h.config = {
        "nr": SYSCALLS,
        "outside_file": str(h.meta_file),
        "outside_node": str(node),
        "sock_path": sock_path,
        "abstract": abstract,
        "key_id": h.key_id,
        "tty_path": tty_path,
    }
    try:
        yield h
    finally:
        for listener in h.listeners:
            listener.close()
        os.close(h.master)
        os.close(h.slave)
        _libc.syscall(ctypes.c_long(_nr("keyctl")), KEYCTL_INVALIDATE, ctypes.c_long(h.key_id))


def _caps(result: str) -> dict[str, int]:
    assert result.startswith("ok:"), result
    return {k: int(v, 16) for k, v in (kv.split("=") for kv in result[3:].split(","))}


def sandbox_escapes(results: dict[str, str], backend: str, mode: str, who: str) -> list[str]:
    """Every probe that got through. The exceptions, each for a reason:

    - CapBnd under Landlock as nobody: a process without CAP_SETPCAP cannot shrink its
      bounding set; with no_new_privs and nothing permitted, exec cannot grant anything.
    - chmod/utime/setxattr (and a no-op chown as nobody) under Landlock in workspace-write:
      Landlock does not cover metadata and a path-blind filter cannot tell files inside the
      roots from files outside, so the runner's own files outside the roots stay open there
      (documented as degraded). bwrap's read-only mounts answer EROFS; read-only mode
      refuses the calls in the filter for both backends.
    """
    escapes = []
    caps = _caps(results["caps"])
    for name in ("CapEff", "CapPrm", "CapInh", "CapAmb"):
        if caps[name]:
            escapes.append(f"{name}={caps[name]:x}")
    if caps["CapBnd"] and not (backend == "landlock" and who != "root"):
        escapes.append(f"CapBnd={caps['CapBnd']:x}")
    checked = [p for p in PROBES if p not in ("caps", "mkfifo", "local_ipc", *METADATA)]
    if mode == "read-only" or backend == "bwrap":
        checked += METADATA
    elif who == "root":
        checked.append("chown")
    escapes += [f"{p}: {results[p]}" for p in checked if reached(results[p])]
    if reached(results["mkfifo"]) != (mode == "workspace-write"):
        escapes.append(f"mkfifo in the workspace ({mode}): {results['mkfifo']}")
    if results["local_ipc"] != "ok:ipc":
        escapes.append(f"socketpair/asyncio broken: {results['local_ipc']}")
    return escapes


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", SANDBOXED_MODES)
def test_kernel_surface_is_closed(box: Box, host: Host, backend: str, mode: str) -> None:
    results, stderr = host.run(mode, backend)
    # Metadata under Landlock in workspace-write: see sandbox_escapes (not enforceable).
    metadata = not (mode == "workspace-write" and backend == "landlock")
    problems = sandbox_escapes(results, backend, mode, box.who)
    problems += host.arrivals(metadata=metadata)
    assert not problems, "\n".join([*problems, stderr])
    assert not (box.ws / "probe-blk").exists() and not (box.ws / "probe-chr").exists()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", SANDBOXED_MODES)
def test_kernel_surface_is_closed_through_exec(
    box: Box, host: Host, model_server: ModelServer, backend: str, mode: str
) -> None:
    """The same probes as a model would run them: one `exec_command` of `interpreter exec`
    (the command's stdin is the runner's pipe here, so TIOCSTI is tried by path only)."""
    probe = str(box.visible(Path(PROBE)))
    command = shlex.join([PYTHON, probe, "surface", json.dumps(host.config), *PROBES])
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": command, "yield_time_ms": 30000})]),
        reply("probed"),
    )
    result = box.exec(model_server.config_args(), mode, backend)
    assert result.returncode == 0, result.stderr
    [output] = list(tool_outputs(model_server.bodies[-1]).values())
    results = dict(json.loads(output.strip().splitlines()[-1]))
    metadata = not (mode == "workspace-write" and backend == "landlock")
    problems = sandbox_escapes(results, backend, mode, box.who)
    problems += host.arrivals(metadata=metadata)
    assert not problems, "\n".join([*problems, output])


def test_probes_reach_the_kernel_in_danger_full_access(box: Box, host: Host) -> None:
    """Controls: unsandboxed, the same probes get through (those needing privilege only as
    root), and the host side sees the arrivals."""
    results, stderr = host.run("danger-full-access", None)
    must_reach = [
        "node_write",
        "mkfifo",
        "key_read",
        "user_keyring",
        "ptrace_child",
        "vm_read_child",
        "unshare_user",
        "unshare_cmd",
        *METADATA,
        "unix_path",
        "unix_abstract",
        "local_ipc",
        "tiocsti_stdin",
        "tiocsti_path",
    ]
    if box.who == "root":
        must_reach += ["loop0_write", "kmsg_write", "mknod_blk", "mknod_chr", "bpf"]
        # As nobody the runner is out of reach already (it makes itself non-dumpable);
        # root's CAP_SYS_PTRACE gets past that.
        must_reach += ["ptrace_parent", "vm_read_parent"]
        assert _caps(results["caps"])["CapEff"] != 0
    if not IS_ROOT:
        must_reach.remove("node_write")  # the node needs CAP_MKNOD to make
    if not os.path.exists("/dev/loop0") and "loop0_write" in must_reach:
        must_reach.remove("loop0_write")
    missed = [f"{p}: {results[p]}" for p in must_reach if not reached(results[p])]
    assert not missed, "\n".join([*missed, stderr])
    assert results["key_read"] == "ok:host-secret"
    arrivals = host.arrivals()
    assert sum("accepted a connection" in a for a in arrivals) == 2, arrivals
    assert any("2 byte(s) injected" in a for a in arrivals), arrivals
    assert any("metadata" in a for a in arrivals), arrivals


def test_network_on_keeps_unix_sockets_and_refuses_vsock(box: Box) -> None:
    """With network on the filter keeps today's behaviour: socket() works (AF_UNIX included,
    so host Unix sockets are reachable then: documented), AF_VSOCK stays refused."""
    code = (
        "import socket, errno\n"
        "for fam in (socket.AF_UNIX, socket.AF_INET, socket.AF_VSOCK):\n"
        "    try:\n"
        "        socket.socket(fam, socket.SOCK_STREAM).close(); print(fam, 'ok')\n"
        "    except OSError as e:\n"
        "        print(fam, errno.errorcode[e.errno])\n"
    )
    for backend in BACKENDS:
        result = box.cli(
            ["-s", "workspace-write", "--network", "--", PYTHON, "-c", code], backend=backend
        )
        lines = result.stdout.splitlines()
        assert lines == ["1 ok", "2 ok", "40 EPERM"], result  # AF_UNIX, AF_INET, AF_VSOCK
