"""Kernel-surface probes, run as a sandboxed command by test_kernel_surface.py (stdlib only).

    python kernel_probe.py [--seccomp FILTER] surface|syscalls CONFIG_JSON PROBE...

Prints one JSON object: probe name -> "ok", "ok:<detail>", an errno name ("EPERM"), or
"absent" when the probe's target does not exist. `surface` probes are what a sandboxed
command tries (end-to-end tests); `syscalls` probes call single syscalls with harmless
arguments, after `--seccomp` installed that raw BPF program (with no_new_privs), to test the
filter alone. CONFIG_JSON carries paths, the key id, socket names and the syscall numbers of
this architecture (from seccomp.toml).
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import json
import os
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

TIOCSTI = 0x5412
TIOCLINUX = 0x541C
TIOCSCTTY = 0x540E
TIOCGWINSZ = 0x5413
CLONE_NEWUSER = 0x10000000
KEYCTL_GET_KEYRING_ID = 0
KEYCTL_READ = 11
KEY_SPEC_USER_KEYRING = -4
PTRACE_SEIZE = 0x4206
SIGCHLD = 17
AT_FDCWD = -100

cfg: dict[str, Any] = {}


def _arg(value: object) -> object:
    # Unannotated ctypes calls pass Python ints as C int: widen them to a full register.
    return ctypes.c_long(value) if isinstance(value, int) else value


def sys_call(name: str, *args: object) -> int:
    """The raw syscall `name` (number from the config); raises OSError on failure."""
    rc = int(libc.syscall(ctypes.c_long(cfg["nr"][name]), *(_arg(a) for a in args)))
    if rc < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return rc


def in_child(action: Callable[[], str]) -> str:
    """Run `action` in a forked child (for probes that change the process) and relay."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            result = action()
        except OSError as exc:
            result = errno.errorcode.get(exc.errno or 0, str(exc.errno))
        except BaseException as exc:  # report, never fall back into the parent's code
            result = f"error:{exc!r}"
        os.write(write_end, result.encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        result = pipe.read().decode()
    os.waitpid(pid, 0)
    return result


def sleeper() -> int:
    pid = os.fork()
    if pid == 0:
        os.execv("/bin/sleep", ["sleep", "30"])
    return pid


# --- probes of the sandboxed command (end-to-end tests) ------------------------------------


def caps() -> str:
    with open("/proc/self/status", encoding="ascii") as f:
        fields = dict(line.split(":\t", 1) for line in f if line.startswith("Cap"))
    return "ok:" + ",".join(f"{k}={int(v, 16):x}" for k, v in sorted(fields.items()))


def open_write(path: str) -> Callable[[], str]:
    def probe() -> str:
        if not os.path.exists(path):
            return "absent"
        os.close(os.open(path, os.O_WRONLY | os.O_CLOEXEC))  # no byte is ever written
        return "ok"

    return probe


def make_node(kind: int, name: str) -> Callable[[], str]:
    def probe() -> str:
        os.mknod(name, kind | 0o600, os.makedev(7, 0) if kind == stat.S_IFBLK else 0x103)
        return "ok"

    return probe


def mkfifo() -> str:
    os.mkfifo("probe-fifo")
    os.unlink("probe-fifo")
    return "ok"


def bpf_map() -> str:
    attr = (ctypes.c_uint32 * 32)(2, 4, 4, 1)  # BPF_MAP_TYPE_ARRAY, key 4, value 4, 1 entry
    os.close(sys_call("bpf", 0, ctypes.byref(attr), ctypes.sizeof(attr)))  # BPF_MAP_CREATE
    return "ok"


def key_read() -> str:
    buf = ctypes.create_string_buffer(256)
    size = sys_call("keyctl", KEYCTL_READ, int(cfg["key_id"]), buf, 256)
    return "ok:" + buf.raw[:size].decode(errors="replace")


def user_keyring() -> str:
    return f"ok:{sys_call('keyctl', KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0)}"


def ptrace(target: Callable[[], int]) -> Callable[[], str]:
    def probe() -> str:
        pid = target()
        sys_call("ptrace", PTRACE_SEIZE, pid, 0, 0)
        return "ok"

    return probe


def vm_read(target: Callable[[], int]) -> Callable[[], str]:
    """process_vm_readv of 8 bytes: a forked child has this buffer at the same address; for
    another process EFAULT still shows the access check was passed."""

    def probe() -> str:
        pid = target()
        buf = ctypes.create_string_buffer(b"probe!!", 8)
        local = (ctypes.c_void_p * 2)(ctypes.addressof(buf), 8)
        remote = (ctypes.c_void_p * 2)(ctypes.addressof(buf), 8)
        return f"ok:{sys_call('process_vm_readv', pid, local, 1, remote, 1, 0)}"

    return probe


def with_child(probe: Callable[[Callable[[], int]], Callable[[], str]]) -> Callable[[], str]:
    def run() -> str:
        pid = sleeper()
        try:
            return probe(lambda: pid)()
        finally:
            os.kill(pid, 9)
            os.waitpid(pid, 0)

    return run


def unshare_user() -> str:
    return in_child(lambda: f"ok:{sys_call('unshare', CLONE_NEWUSER)}")


def unshare_cmd() -> str:
    rc = subprocess.run(["unshare", "-Ur", "true"], capture_output=True, check=False).returncode
    return "ok" if rc == 0 else f"rc={rc}"


def meta(action: Callable[[str], object]) -> Callable[[], str]:
    def probe() -> str:
        action(cfg["outside_file"])
        return "ok"

    return probe


def _chown_same(path: str) -> None:
    info = os.stat(path)
    os.chown(path, info.st_uid, info.st_gid)  # a no-op owner: allowed without CAP_CHOWN


def unix_connect(address: str) -> Callable[[], str]:
    def probe() -> str:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(2)
            sock.connect(address)
        return "ok"

    return probe


def local_ipc() -> str:
    async def roundtrip() -> bytes:
        proc = await asyncio.create_subprocess_exec(
            "cat", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
        )
        out, _ = await proc.communicate(b"ipc")
        return out

    left, right = socket.socketpair()
    left.sendall(b"x")
    assert right.recv(1) == b"x"
    return "ok:" + asyncio.run(roundtrip()).decode()


def tiocsti(open_tty: Callable[[], int]) -> Callable[[], str]:
    """Become a session leader with the terminal as controlling tty (TIOCSTI's own rule for
    the unprivileged), then push a byte into its input."""

    def child() -> str:
        os.setsid()
        fd = open_tty()
        libc.ioctl(fd, ctypes.c_ulong(TIOCSCTTY), 0)  # no-op when open() already did it
        if libc.ioctl(fd, ctypes.c_ulong(TIOCSTI), ctypes.c_char_p(b"X")) != 0:
            raise OSError(ctypes.get_errno(), "TIOCSTI")
        return "ok"

    return lambda: in_child(child)


def _open_tty_path() -> int:
    path = cfg["tty_path"]
    if not os.path.exists(path):
        raise FileNotFoundError(errno.ENOENT, path)
    return os.open(path, os.O_RDWR)


def surface_probes() -> dict[str, Callable[[], str]]:
    return {
        "caps": caps,
        "loop0_write": open_write("/dev/loop0"),
        "kmsg_write": open_write("/dev/kmsg"),
        "node_write": open_write(cfg.get("outside_node", "")),
        "mknod_blk": make_node(stat.S_IFBLK, "probe-blk"),
        "mknod_chr": make_node(stat.S_IFCHR, "probe-chr"),
        "mkfifo": mkfifo,
        "bpf": bpf_map,
        "key_read": key_read,
        "user_keyring": user_keyring,
        "ptrace_child": with_child(ptrace),
        "vm_read_child": with_child(vm_read),
        "ptrace_parent": ptrace(os.getppid),
        "vm_read_parent": vm_read(os.getppid),
        "unshare_user": unshare_user,
        "unshare_cmd": unshare_cmd,
        "chmod": meta(lambda p: os.chmod(p, 0o777)),
        "chown": meta(_chown_same),
        "utime": meta(lambda p: os.utime(p, (0, 0))),
        "setxattr": meta(lambda p: os.setxattr(p, "user.oiexec", b"1")),
        "unix_path": unix_connect(cfg.get("sock_path", "")),
        "unix_abstract": unix_connect("\0" + cfg.get("abstract", "")),
        "local_ipc": local_ipc,
        "tiocsti_stdin": tiocsti(lambda: 0),
        "tiocsti_path": tiocsti(_open_tty_path),
    }


# --- raw syscalls under the filter alone (unit tests) --------------------------------------


def _call(name: str, *args: object) -> Callable[[], str]:
    def probe() -> str:
        rc = sys_call(name, *args)
        if name in {"socket", "bpf", "io_uring_setup", "pidfd_getfd", "fsopen"} and rc > 2:
            os.close(rc)
        return "ok"

    return probe


def _path(name: str) -> bytes:
    return os.path.join(cfg["tmp"], name).encode()


def _ioctl_pty(cmd: int) -> Callable[[], str]:
    def probe() -> str:
        master, slave = os.openpty()  # the probe's own pty: an injected byte goes nowhere
        try:
            buf = ctypes.create_string_buffer(b"X", 16)
            if libc.ioctl(slave, ctypes.c_ulong(cmd), buf) != 0:
                raise OSError(ctypes.get_errno(), "ioctl")
            return "ok"
        finally:
            os.close(master)
            os.close(slave)

    return probe


def _clone_newuser() -> str:
    def child() -> str:
        pid = sys_call("clone", CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)
        if pid == 0:
            os._exit(0)  # the clone, should the filter let it through: leave at once
        os.waitpid(pid, 0)
        return "ok"

    return in_child(child)


def syscall_probes() -> dict[str, Callable[[], str]]:
    uid, gid = os.getuid(), os.getgid()
    fifo, chr_node, blk_node = stat.S_IFIFO | 0o600, stat.S_IFCHR | 0o600, stat.S_IFBLK | 0o600
    probes = {
        "socket_unix": _call("socket", socket.AF_UNIX, socket.SOCK_STREAM, 0),
        "socket_inet": _call("socket", socket.AF_INET, socket.SOCK_STREAM, 0),
        "socket_vsock": _call("socket", 40, socket.SOCK_STREAM, 0),
        "socketpair_unix": _call("socketpair", socket.AF_UNIX, 1, 0, (ctypes.c_int * 2)()),
        "socketpair_inet": _call("socketpair", socket.AF_INET, 1, 0, (ctypes.c_int * 2)()),
        "tiocsti": _ioctl_pty(TIOCSTI),
        "tiocsti_high_bits": _ioctl_pty(0xFFFFFFFF00000000 | TIOCSTI),
        "tioclinux": _ioctl_pty(TIOCLINUX),
        "tiocgwinsz": _ioctl_pty(TIOCGWINSZ),
        "mknodat_chr": _call("mknodat", AT_FDCWD, _path("chr"), chr_node, 0x103),
        "mknodat_blk": _call("mknodat", AT_FDCWD, _path("blk"), blk_node, 0x700),
        "mknodat_fifo": _call("mknodat", AT_FDCWD, _path("fifo"), fifo, 0),
        "mknodat_reg": _call("mknodat", AT_FDCWD, _path("reg"), stat.S_IFREG | 0o600, 0),
        "clone_newuser": _clone_newuser,
        "clone3": _call("clone3", 0, 0),
        "bpf": _call("bpf", 0, (ctypes.c_uint32 * 32)(), 128),
        "keyctl": _call("keyctl", KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0),
        "add_key": _call("add_key", b"", b"", 0, 0, -3),
        "request_key": _call("request_key", b"", b"", 0, 0),
        "ptrace": _call("ptrace", 2, os.getpid(), 0, 0),  # PEEKDATA of a non-tracee
        "process_vm_readv": _call("process_vm_readv", os.getpid(), 0, 0, 0, 0, 0),
        "pidfd_getfd": _call("pidfd_getfd", -1, 0, 0),
        "perf_event_open": _call("perf_event_open", 0, 0, -1, -1, 0),
        "userfaultfd": _call("userfaultfd", 0xDEAD),
        "init_module": _call("init_module", 0, 0, b""),
        "finit_module": _call("finit_module", -1, b"", 0),
        "delete_module": _call("delete_module", b"oiexec_no_such_module", os.O_NONBLOCK),
        "swapon": _call("swapon", 0, 0),
        "swapoff": _call("swapoff", 0),
        "mount": _call("mount", 0, b"/nonexistent-oiexec", 0, 0, 0),
        "umount2": _call("umount2", b"/nonexistent-oiexec", 0),
        "pivot_root": _call("pivot_root", b"/nonexistent-oiexec", b"/nonexistent-oiexec"),
        "open_tree": _call("open_tree", -1, b"/nonexistent-oiexec", 0),
        "fsopen": _call("fsopen", b"oiexec-nofs", 0),
        "fspick": _call("fspick", -1, b"/nonexistent-oiexec", 0),
        "fsmount": _call("fsmount", -1, 0, 0),
        "fsconfig": _call("fsconfig", -1, 0, 0, 0, 0),
        "move_mount": _call("move_mount", -1, b"", -1, b"", 0),
        "mount_setattr": _call("mount_setattr", -1, b"", 0, 0, 0),
        "setns": _call("setns", -1, 0),
        "io_uring_setup": _call("io_uring_setup", 0, 0),
        "chmod": _call("fchmodat", AT_FDCWD, _path("file"), 0o640, 0),
        "chown": _call("fchownat", AT_FDCWD, _path("file"), uid, gid, 0),
        "utime": _call("utimensat", AT_FDCWD, _path("file"), 0, 0),
        "setxattr": _call("setxattr", _path("file"), b"user.oiexec", b"1", 1, 0),
    }
    # Last: a process that entered a user namespace sees its files owned by nobody.
    probes["unshare_newuser"] = lambda: in_child(lambda: _call("unshare", CLONE_NEWUSER)())
    return probes


def install(program: bytes) -> None:
    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    buf = ctypes.create_string_buffer(program, len(program))
    prog = Fprog(len(program) // 8, ctypes.addressof(buf))
    if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "installing the seccomp filter")


def main(argv: list[str]) -> None:
    if argv[0] == "--seccomp":
        with open(argv[1], "rb") as f:
            program = f.read()
        argv = argv[2:]
    else:
        program = b""
    kind, config, names = argv[0], json.loads(argv[1]), argv[2:]
    cfg.update(config)
    if kind == "syscalls":
        cfg.setdefault("tmp", tempfile.mkdtemp(prefix="oiexec-probe-"))
        with open(os.path.join(cfg["tmp"], "file"), "w") as f:
            f.write("x")
    table = surface_probes() if kind == "surface" else syscall_probes()
    if program:
        install(program)
    results: dict[str, str] = {}
    for name in names:
        try:
            results[name] = table[name]()
        except OSError as exc:
            results[name] = errno.errorcode.get(exc.errno or 0, f"errno{exc.errno}")
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1:])
