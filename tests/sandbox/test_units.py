"""Argument building, BPF layout, Seatbelt parameters and path rules (no sandbox needed)."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest

from oiexec.sandbox import seccomp
from oiexec.sandbox.base import SandboxPolicy
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


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_bpf_checks_arch_first_and_ends_in_allow(arch: str) -> None:
    prog = _insns(seccomp.build_filter(network_disabled=True, arch=arch))
    audit = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}[arch]
    assert prog[0] == (0x20, 0, 0, 4) and prog[1][3] == audit
    assert prog[2] == (0x06, 0, 0, 0x80000000)  # foreign arch: kill
    assert prog[-1] == (0x06, 0, 0, 0x7FFF0000)
    assert len(prog) < 40


def test_bpf_golden_x86_64_network_off() -> None:
    # arch check, x32, io_uring x3, socket/socketpair: only AF_UNIX; default allow.
    expected = (
        "2000000004000000150001003e0000c0060000000000008020000000000000003500000100000040"
        "060000000100050015000001a9010000060000000100050015000001aa0100000600000001000500"
        "15000001ab0100000600000001000500150001002900000015000004350000002000000010000000"
        "15000100010000000600000001000500060000000000ff7f060000000000ff7f"
    )
    assert seccomp.build_filter(network_disabled=True, arch="x86_64").hex() == expected


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
