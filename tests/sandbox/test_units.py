"""Argument building, BPF layout, Seatbelt parameters and path rules (no sandbox needed)."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from oiexec.core.policy import SandboxPolicy
from oiexec.sandbox import landlock, privileges, profiles, seccomp
from oiexec.sandbox.bwrap import BwrapFeatures, bwrap_args
from oiexec.sandbox.landlock import attr_size
from oiexec.sandbox.paths import PROTECTED_NAMES, resolve_gitdirs, write_denial
from oiexec.sandbox.privtmp import PrivateTmp, temp_roots
from oiexec.sandbox.profiles import policy_data
from oiexec.sandbox.seatbelt import seatbelt_argv


def _policy(tmp_path: Path, **kw: object) -> SandboxPolicy:
    return SandboxPolicy(mode="workspace-write", cwd=tmp_path, exclude_tmpdir_env_var=True, **kw)  # type: ignore[arg-type]


def test_protected_names_come_from_policy_data() -> None:
    assert tuple(policy_data()["protected_names"]) == PROTECTED_NAMES
    assert {".git", ".openinterpreter", ".agents", ".codex"} <= set(PROTECTED_NAMES)


def test_bwrap_mount_order_roots_then_protected(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    args, created = bwrap_args(
        _policy(ws), BwrapFeatures("/usr/bin/bwrap"), status_fd=7, seccomp_fd=8
    )
    joined = " ".join(args)
    assert joined.index("--ro-bind / /") < joined.index(f"--bind {ws} {ws}")
    assert joined.index(f"--bind {ws} {ws}") < joined.index(f"--ro-bind {ws}/.git {ws}/.git")
    assert f"--tmpfs {ws}/.openinterpreter --remount-ro {ws}/.openinterpreter" in joined
    assert ws / ".openinterpreter" in created and ws / ".git" not in created
    assert "--unshare-net" in args and "--seccomp 8" in joined and "--json-status-fd 7" in joined
    assert not (ws / ".openinterpreter").exists()  # nothing pre-created on the host


def test_bwrap_network_on_keeps_host_network(tmp_path: Path) -> None:
    args, _ = bwrap_args(
        _policy(tmp_path, network_access=True), BwrapFeatures("bwrap"), status_fd=3, seccomp_fd=4
    )
    assert "--unshare-net" not in args
    assert "OPENINTERPRETER_SANDBOX_NETWORK_DISABLED" in args  # unset, not set


def test_read_only_binds_nothing_writable(tmp_path: Path) -> None:
    policy = SandboxPolicy(mode="read-only", cwd=tmp_path)
    args, created = bwrap_args(policy, BwrapFeatures("bwrap"), status_fd=3, seccomp_fd=4)
    assert "--bind" not in args and created == []


def test_worktree_gitdir_and_commondir_are_protected(tmp_path: Path) -> None:
    main = tmp_path / "main"
    subprocess.run(["git", "init", "-q", str(main)], check=True)
    subprocess.run(
        ["git", "-C", str(main), "commit", "-q", "--allow-empty", "-m", "x"],
        check=True,
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
            "PATH": "/usr/bin:/bin",
        },
    )
    wt = tmp_path / "wt"
    subprocess.run(["git", "-C", str(main), "worktree", "add", "-q", str(wt)], check=True)
    dirs = resolve_gitdirs(wt / ".git")
    assert (main / ".git").resolve() in dirs
    assert write_denial(_policy(wt, extra_roots=(main,)), main / ".git" / "hooks" / "x")
    args, _ = bwrap_args(_policy(wt), BwrapFeatures("bwrap"), status_fd=3, seccomp_fd=4)
    assert str((main / ".git").resolve()) in args


def test_write_denial_matches_the_mode(tmp_path: Path) -> None:
    policy = _policy(tmp_path)
    assert write_denial(policy, tmp_path / "a.txt") is None
    assert write_denial(policy, tmp_path / ".openinterpreter" / "x")
    assert write_denial(policy, Path("/etc/passwd"))
    assert write_denial(SandboxPolicy(mode="read-only", cwd=tmp_path), tmp_path / "a")


def _insns(program: bytes) -> list[tuple[int, int, int, int]]:
    return [struct.unpack("<HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]


_AUDIT = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_ALLOW, _KILL, _EPERM, _ENOSYS = 0x7FFF0000, 0x80000000, 0x50001, 0x50026


def _verdict(
    program: bytes, arch: str, name: str | int, *args: int, audit: int | None = None
) -> int:
    """Run the classic BPF `program` on one syscall, as the kernel would (the opcodes the
    compiler emits; anything else fails the test)."""
    table = profiles.load("linux/seccomp.toml")["arch"][arch]
    nr = table["syscalls"][name] if isinstance(name, str) else name
    full = [*args, 0, 0, 0, 0, 0, 0][:6]
    data = struct.pack("<iIQ6Q", nr, audit or _AUDIT[arch], 0, *full)
    prog, pc, acc = _insns(program), 0, 0
    while True:
        code, jt, jf, k = prog[pc]
        pc += 1
        if code == 0x20:  # ld [k]
            acc = struct.unpack_from("<I", data, k)[0]
        elif code == 0x54:  # and #k
            acc &= k
        elif code in (0x15, 0x35, 0x45):  # jeq, jge, jset
            hit = acc == k if code == 0x15 else acc >= k if code == 0x35 else bool(acc & k)
            pc += jt if hit else jf
        elif code == 0x06:
            return k
        else:
            raise AssertionError(f"unexpected opcode {code:#x}")


def _filter(arch: str, *, net_off: bool = True, ro: bool = False, chown: bool = False) -> bytes:
    return seccomp.build_filter(network_disabled=net_off, read_only=ro, deny_chown=chown, arch=arch)


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_bpf_checks_arch_first_and_ends_in_allow(arch: str) -> None:
    prog = _insns(_filter(arch))
    assert prog[0] == (0x20, 0, 0, 4) and prog[1][3] == _AUDIT[arch]
    assert prog[2] == (0x06, 0, 0, 0x80000000)  # foreign arch: kill
    assert prog[-1] == (0x06, 0, 0, 0x7FFF0000)
    assert len(prog) < 140
    assert _verdict(_filter(arch), arch, 0, audit=0x40000003) == _KILL  # i386 int 0x80


def test_bpf_golden_x86_64_network_off() -> None:
    # arch check, x32; argument blocks: ioctl (TIOCSTI, TIOCLINUX), mknod and mknodat
    # (S_IFCHR, S_IFBLK, set-id bits), clone and unshare (CLONE_NEWUSER), set-id bits of
    # chmod/fchmod/creat/fchmodat/fchmodat2/open/openat, socketpair (only AF_UNIX); clone3 and
    # openat2 -> ENOSYS; the always-refused list plus socket -> EPERM; default allow.
    expected = (
        "2000000004000000150001003e0000c0060000000000008020000000000000003500000100000040"
        "0600000001000500150000051000000020000000180000001500010012540000150000011c540000"
        "0600000001000500060000000000ff7f150000098500000020000000180000005400000000f00000"
        "150001000020000015000001006000000600000001000500200000001800000045000001000c0000"
        "0600000001000500060000000000ff7f150000090301000020000000200000005400000000f00000"
        "150001000020000015000001006000000600000001000500200000002000000045000001000c0000"
        "0600000001000500060000000000ff7f150000043800000020000000100000004500000100000010"
        "0600000001000500060000000000ff7f150000041001000020000000100000004500000100000010"
        "0600000001000500060000000000ff7f150000045a000000200000001800000045000001000c0000"
        "0600000001000500060000000000ff7f150000045b000000200000001800000045000001000c0000"
        "0600000001000500060000000000ff7f1500000455000000200000001800000045000001000c0000"
        "0600000001000500060000000000ff7f150000040c010000200000002000000045000001000c0000"
        "0600000001000500060000000000ff7f15000004c4010000200000002000000045000001000c0000"
        "0600000001000500060000000000ff7f1500000402000000200000002000000045000001000c0000"
        "0600000001000500060000000000ff7f1500000401010000200000002800000045000001000c0000"
        "0600000001000500060000000000ff7f150000043500000020000000100000001500010001000000"
        "0600000001000500060000000000ff7f15000100b301000015000001b50100000600000026000500"
        "15002200a901000015002100aa01000015002000ab01000015001f004101000015001e00fa000000"
        "15001d00f800000015001c00f900000015001b006500000015001a00360100001500190037010000"
        "15001800b60100001500170043010000150016002a01000015001500f60000001500140040010000"
        "15001300af000000150012003901000015001100b000000015001000a300000015000f00a7000000"
        "15000e00a800000015000d00a900000015000c00a500000015000b00a600000015000a009b000000"
        "15000900ac01000015000800d301000015000700ad01000015000600ae01000015000500b0010000"
        "15000400af01000015000300b101000015000200ba01000015000100340100001500000129000000"
        "0600000001000500060000000000ff7f"
    )
    assert _filter("x86_64").hex() == expected


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_bpf_verdicts(arch: str) -> None:
    off, on = _filter(arch), _filter(arch, net_off=False)
    data = profiles.load("linux/seccomp.toml")
    present = data["arch"][arch]["syscalls"]
    for name in data["deny"]["always"]:
        if name in present:
            assert _verdict(off, arch, name) == _EPERM == _verdict(on, arch, name), name
    assert _verdict(off, arch, "clone3") == _ENOSYS
    assert _verdict(off, arch, "ioctl", 0, 0x5412) == _EPERM  # TIOCSTI
    assert _verdict(off, arch, "ioctl", 0, 0xFFFF_FFFF_0000_5412) == _EPERM  # low 32 bits
    assert _verdict(off, arch, "ioctl", 0, 0x541C) == _EPERM  # TIOCLINUX
    assert _verdict(off, arch, "ioctl", 0, 0x5401) == _ALLOW  # TCGETS
    at_fdcwd = 0xFFFF_FFFF_FFFF_FF9C
    assert _verdict(off, arch, "mknodat", at_fdcwd, 0, 0o020644) == _EPERM
    assert _verdict(off, arch, "mknodat", at_fdcwd, 0, 0o060600) == _EPERM
    assert _verdict(off, arch, "mknodat", at_fdcwd, 0, 0o010644) == _ALLOW  # FIFO
    assert _verdict(off, arch, "mknodat", at_fdcwd, 0, 0o000644) == _ALLOW  # regular
    assert ("mknod" in present) == (arch == "x86_64")
    for call in ("clone", "unshare"):
        assert _verdict(off, arch, call, 0x10000000 | 17) == _EPERM
        assert _verdict(off, arch, call, 0x01200011) == _ALLOW  # fork()'s flags
    assert _verdict(off, arch, "socket", 1) == _EPERM  # AF_UNIX too: host sockets
    assert _verdict(off, arch, "socket", 2) == _EPERM
    assert _verdict(off, arch, "socketpair", 1) == _ALLOW
    assert _verdict(off, arch, "socketpair", 2) == _EPERM
    assert _verdict(on, arch, "socket", 1) == _verdict(on, arch, "socket", 2) == _ALLOW
    assert _verdict(on, arch, "socket", 40) == _verdict(on, arch, "socketpair", 40) == _EPERM
    assert _verdict(off, arch, "fchmodat") == _ALLOW  # metadata: only in read-only
    # Set-id bits never: a set-uid program left in the workspace escalates on the host.
    assert _verdict(off, arch, "fchmodat", at_fdcwd, 0, 0o4755) == _EPERM
    assert _verdict(off, arch, "fchmodat", at_fdcwd, 0, 0o2755) == _EPERM
    assert _verdict(off, arch, "fchmodat", at_fdcwd, 0, 0o1777) == _ALLOW  # sticky is fine
    assert _verdict(off, arch, "fchmod", 3, 0o4755) == _EPERM
    assert _verdict(off, arch, "openat", at_fdcwd, 0, 0o101, 0o4755) == _EPERM
    assert _verdict(off, arch, "openat", at_fdcwd, 0, 0o101, 0o755) == _ALLOW
    assert _verdict(off, arch, "mknodat", at_fdcwd, 0, 0o104755) == _EPERM
    assert _verdict(off, arch, "openat2") == _ENOSYS
    if arch == "x86_64":
        assert _verdict(off, arch, "chmod", 0, 0o6755) == _EPERM
        assert _verdict(off, arch, "open", 0, 0o101, 0o4700) == _EPERM
        assert _verdict(off, arch, "creat", 0, 0o4700) == _EPERM
    assert _verdict(off, arch, 0) == _ALLOW  # read / io_setup
    if arch == "x86_64":
        assert _verdict(off, arch, 0x40000000 | 1) == _EPERM  # x32


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_bpf_read_only_and_chown_lists(arch: str) -> None:
    data = profiles.load("linux/seccomp.toml")
    present = data["arch"][arch]["syscalls"]
    ro, chown, plain = _filter(arch, ro=True), _filter(arch, chown=True), _filter(arch)
    for name in data["deny"]["read_only"]:
        if name in present:
            assert _verdict(ro, arch, name) == _EPERM, name
            expected = _EPERM if name in data["deny"]["chown"] else _ALLOW
            assert _verdict(chown, arch, name) == expected, name
            assert _verdict(plain, arch, name) == _ALLOW, name
    assert _verdict(ro, arch, "ioctl", 0, 0x5412) == _EPERM  # the other checks stay


def test_seccomp_toml_names_exist_per_arch() -> None:
    data = profiles.load("linux/seccomp.toml")
    x86, arm = (set(data["arch"][a]["syscalls"]) for a in ("x86_64", "aarch64"))
    # aarch64 only has the *at forms; everything else exists on both.
    assert x86 - arm == {
        *("mknod", "chmod", "chown", "lchown", "utime", "utimes", "futimesat", "open", "creat")
    }
    assert arm <= x86
    for arch in ("x86_64", "aarch64"):
        numbers = list(data["arch"][arch]["syscalls"].values())
        assert len(numbers) == len(set(numbers)), arch


_PROBE = str(Path(__file__).with_name("kernel_probe.py"))
#: Refused by every filter, whatever the flags (errno name as the probe reports it).
_ALWAYS_REFUSED = {
    **dict.fromkeys(
        (  # noqa: SIM905 (a word list reads better here)
            "tiocsti tiocsti_high_bits tioclinux mknodat_chr mknodat_blk clone_newuser bpf "
            "keyctl add_key request_key ptrace process_vm_readv pidfd_getfd perf_event_open "
            "userfaultfd init_module finit_module delete_module swapon swapoff mount umount2 "
            "pivot_root open_tree fsopen fspick fsmount fsconfig move_mount mount_setattr setns "
            "io_uring_setup unshare_newuser"
        ).split(),
        "EPERM",
    ),
    "clone3": "ENOSYS",  # libc falls back to clone
}
_METADATA = ("chmod", "chown", "utime", "setxattr")
#: Never refused: the same result as without a filter.
_KEPT = ("socketpair_unix", "tiocgwinsz", "mknodat_fifo", "mknodat_reg")
_SOCKETS = ("socket_unix", "socket_inet", "socket_vsock", "socketpair_inet")


def _probe_syscalls(tmp: Path, program: bytes | None) -> dict[str, str]:
    """Run every syscall probe in a fresh child process, under `program` when given."""
    tmp.mkdir()
    numbers = profiles.load("linux/seccomp.toml")["arch"][seccomp.native_arch()]["syscalls"]
    args = [sys.executable, _PROBE]
    if program is not None:
        (tmp / "filter.bpf").write_bytes(program)
        args += ["--seccomp", str(tmp / "filter.bpf")]
    names = [*_ALWAYS_REFUSED, *_METADATA, *_KEPT, *_SOCKETS]
    names.sort(key=lambda n: n == "unshare_newuser")  # last: it changes the process
    config = json.dumps({"nr": numbers, "tmp": str(tmp)})
    out = subprocess.run(
        [*args, "syscalls", config, *names], capture_output=True, text=True, check=True
    )
    return dict(json.loads(out.stdout))


@pytest.mark.parametrize("network_off", [True, False])
@pytest.mark.parametrize("read_only", [False, True])
def test_filter_for_real_in_a_child(tmp_path: Path, network_off: bool, read_only: bool) -> None:
    """The compiled filter installed in a real child: every refused call gets its errno,
    everything else behaves exactly as it does without the filter."""
    control = _probe_syscalls(tmp_path / "control", None)
    program = seccomp.build_filter(
        network_disabled=network_off, read_only=read_only, deny_chown=False
    )
    got = _probe_syscalls(tmp_path / "filtered", program)
    # The probes work unfiltered, so a refusal below is the filter's doing.
    assert control["socket_unix"] == control["keyctl"] == control["tiocgwinsz"] == "ok"
    assert control["process_vm_readv"] == control["chmod"] == control["socketpair_unix"] == "ok"
    assert control["clone3"] == "EINVAL" and control["pidfd_getfd"] == "EBADF"
    for name, errno_name in _ALWAYS_REFUSED.items():
        assert got[name] == errno_name, (name, got[name], control[name])
    for name in _KEPT:
        assert got[name] == control[name], name
    for name in _METADATA:
        assert got[name] == ("EPERM" if read_only else control[name]), name
    if network_off:
        assert all(got[n] == "EPERM" for n in _SOCKETS), got
    else:
        assert got["socket_vsock"] == "EPERM"
        assert got["socket_unix"] == control["socket_unix"]
        assert got["socket_inet"] == control["socket_inet"]
        assert got["socketpair_inet"] == control["socketpair_inet"]


def test_deny_chown_refuses_only_the_chown_family(tmp_path: Path) -> None:
    program = seccomp.build_filter(network_disabled=True, read_only=False, deny_chown=True)
    got = _probe_syscalls(tmp_path / "filtered", program)
    assert got["chown"] == "EPERM"
    assert got["chmod"] == got["utime"] == "ok"


def _status_under_drop() -> tuple[dict[str, int], int]:
    code = (
        "import ctypes; "
        "print(open('/proc/self/status').read()); "
        "print('Securebits:', ctypes.CDLL(None).prctl(27, 0, 0, 0, 0))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        preexec_fn=privileges.drop_capabilities,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    caps = {k: int(v, 16) for k, v in fields.items() if k.startswith("Cap")}
    return caps, int(fields["Securebits"])


def test_drop_capabilities_in_a_child() -> None:
    caps, securebits = _status_under_drop()
    assert caps["CapEff"] == caps["CapPrm"] == caps["CapInh"] == caps["CapAmb"] == 0
    if os.geteuid() == 0:
        # Root had CAP_SETPCAP: the bounding set is empty and uid 0 is locked out of caps.
        assert caps["CapBnd"] == 0
        assert securebits == privileges.LOCKED_SECUREBITS


def test_landlock_rights_per_abi() -> None:
    for abi in (2, 3, 4, 5, 6, 7):
        roots, devices = landlock.root_access(abi), landlock.device_access(abi)
        handled = landlock.handled_access(abi)
        assert not roots & (landlock.MAKE_CHAR | landlock.MAKE_BLOCK)  # granted nowhere
        assert handled & landlock.MAKE_CHAR and handled & landlock.MAKE_BLOCK
        assert roots | devices | landlock.MAKE_CHAR | landlock.MAKE_BLOCK == handled
        assert bool(handled & landlock.IOCTL_DEV) == (abi >= 5)
        file_only = landlock.WRITE_FILE | landlock.TRUNCATE | landlock.IOCTL_DEV
        assert devices & ~file_only == 0  # valid on a non-directory
    assert "/dev" not in landlock.DEVICE_NODES and "/dev/loop0" not in landlock.DEVICE_NODES


def test_landlock_attr_sizes_per_abi() -> None:
    assert [attr_size(a) for a in (2, 3, 4, 5, 6, 7)] == [8, 8, 16, 16, 24, 24]


def test_seatbelt_argv_passes_paths_as_params(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    link = tmp_path / "link"
    link.symlink_to(ws)
    argv = seatbelt_argv(_policy(link), ["echo", "hi"])
    assert argv[:2] == ["/usr/bin/sandbox-exec", "-p"]
    profile = argv[2]
    assert str(ws) not in profile and "(deny default)" in profile
    assert '(subpath (param "WRITABLE_ROOT_0"))' in profile
    assert f"-DWRITABLE_ROOT_0={ws.resolve()}" in argv  # symlink resolved
    assert f"-DWRITABLE_ROOT_0_RO_0={ws.resolve()}/.git" in argv
    assert "network-outbound" not in profile
    assert argv[-3:] == ["--", "echo", "hi"]


def test_seatbelt_network_and_read_only(tmp_path: Path) -> None:
    on = seatbelt_argv(_policy(tmp_path, network_access=True), ["true"])
    assert "(allow network-outbound)" in on[2]
    assert any(a.startswith("-DDARWIN_USER_CACHE_DIR=") for a in on)
    ro = seatbelt_argv(SandboxPolicy(mode="read-only", cwd=tmp_path), ["true"])
    assert "file-write*\n" not in ro[2] and not any(a.startswith("-DWRITABLE") for a in ro)


def test_private_tmp_is_bound_before_a_workspace_under_tmp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TMPDIR", raising=False)
    ws = tmp_path / "ws"  # pytest's tmp_path lives under /tmp
    ws.mkdir()
    policy = SandboxPolicy(mode="workspace-write", cwd=ws)
    private = PrivateTmp()
    try:
        [tmp] = private.roots(policy)
        assert tmp.path == Path("/tmp") and tmp.bind and tmp.host.name == "0"
        assert tmp.host.parent.name.startswith("oiexec-tmp-")
        assert private.roots(policy) == [tmp]  # one private dir per sandbox, reused
        args, created = bwrap_args(
            policy, BwrapFeatures("bwrap"), status_fd=3, seccomp_fd=4, private=[tmp]
        )
        joined = " ".join(args)
        assert f"--bind {tmp.host} /tmp" in joined
        assert "--bind /tmp /tmp" not in joined
        assert joined.index(f"--bind {tmp.host} /tmp") < joined.index(f"--bind {ws} {ws}")
        assert f"--ro-bind {tmp.host}/.git /tmp/.git" in joined
        # Guards for missing names are made on the host only in the workspace, never in /tmp.
        assert all(p.parent == ws for p in created) and ws / ".git" in created
        assert not any(f"--tmpfs /tmp/{name}" in joined for name in PROTECTED_NAMES)
    finally:
        private.close()
    assert not tmp.host.parent.exists()


def test_which_temp_roots_become_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws, other = tmp_path / "ws", Path("/var/tmp")
    ws.mkdir()
    nested = tmp_path / "t"
    nested.mkdir()

    def roots(tmpdir: Path, **kw: object) -> list[tuple[Path, bool]]:
        monkeypatch.setenv("TMPDIR", str(tmpdir))
        return temp_roots(SandboxPolicy(mode="workspace-write", cwd=ws, **kw))  # type: ignore[arg-type]

    assert roots(other) == [(Path("/tmp"), False), (other, False)]
    assert roots(nested) == [(Path("/tmp"), False), (nested.resolve(), True)]
    assert roots(ws) == [(Path("/tmp"), False)]  # the workspace itself stays a host root
    assert roots(Path("/"), exclude_slash_tmp=True) == []  # a $TMPDIR enclosing the workspace
    assert roots(other, exclude_slash_tmp=True, exclude_tmpdir_env_var=True) == []
    monkeypatch.setenv("TMPDIR", str(other))
    assert temp_roots(SandboxPolicy(mode="read-only", cwd=ws)) == []
    assert temp_roots(SandboxPolicy(mode="workspace-write", cwd=Path("/tmp"))) == [(other, False)]


def test_nested_tmpdir_is_made_inside_the_private_tmp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nested = tmp_path / "t"
    nested.mkdir()
    monkeypatch.setenv("TMPDIR", str(nested))
    private = PrivateTmp()
    try:
        tmp, inner = private.roots(SandboxPolicy(mode="workspace-write", cwd=Path("/var/tmp")))
        assert not inner.bind and inner.host == tmp.host / nested.resolve().relative_to("/tmp")
        assert (inner.host / ".openinterpreter").is_dir()
        assert not (nested / ".openinterpreter").exists()
    finally:
        private.close()
