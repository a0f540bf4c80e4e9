"""How a bwrap command is started: its limits as wrapper builtins, so the runner can vfork
(issue 25), failing closed; and the abstract-socket scope kept wherever it closes anything."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from oiexec.core.policy import SandboxLimits, SandboxPolicy
from oiexec.sandbox import landlock
from oiexec.sandbox.bwrap import SETUP_FAILURE_EXIT_CODE, BwrapFeatures, BwrapSandbox, wrap
from oiexec.sandbox.limits import Limiter


def _limits_of(script: str) -> dict[str, tuple[str, str]]:
    out = subprocess.run(
        ["/bin/sh", "-c", f"{script} && cat /proc/self/limits"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = {}
    for line in out.splitlines()[1:]:
        name, soft, hard = line[:26].strip(), *line[26:].split()[:2]
        rows[name] = (soft, hard)
    return rows


def test_shell_steps_set_the_same_rlimits() -> None:
    asked = SandboxLimits(max_processes=None, max_file_size=1_000_100, max_cpu_seconds=7)
    limiter = Limiter(asked, nproc_overhead=3, cgroup_overhead=3)
    command = limiter.prepare()
    try:
        steps = command.shell_steps()
        assert steps is not None
        rows = _limits_of(steps)
    finally:
        command.release(kill=False)
    # Whole 512-byte blocks: never above what was asked for.
    assert rows["Max file size"] == (str(1_000_100 // 512 * 512),) * 2
    assert rows["Max cpu time"] == ("7", "8")


def test_a_process_limit_without_a_cgroup_needs_the_preexec_fn() -> None:
    limiter = Limiter(SandboxLimits(max_processes=50), nproc_overhead=3, cgroup_overhead=3)
    limiter._root = False  # RLIMIT_NPROC: no ulimit flag every sh agrees on
    command = limiter.prepare()
    try:
        assert command.shell_steps() is None
    finally:
        command.release(kill=False)


def test_the_wrapper_never_starts_bwrap_when_a_step_fails(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    argv = wrap("/usr/bin/touch", [str(marker)], status_fd=0, steps="false")
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == SETUP_FAILURE_EXIT_CODE
    assert not marker.exists()


def _prepared_preexec(tmp_path: Path, *, network: bool) -> object:
    policy = SandboxPolicy(mode="workspace-write", cwd=tmp_path, network_access=network)
    sandbox = BwrapSandbox(
        policy, BwrapFeatures("/usr/bin/bwrap"), {}, landlock_abi=landlock.abi_version()
    )
    try:
        prepared = sandbox.prepare(["/bin/true"], cwd=tmp_path, env={})
        prepared.after()
        return prepared.preexec_fn
    finally:
        sandbox.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="a non-root runner's RLIMIT_NPROC needs it")
def test_network_off_bwrap_commands_need_no_preexec_fn(tmp_path: Path) -> None:
    assert _prepared_preexec(tmp_path, network=False) is None


@pytest.mark.skipif(landlock.abi_version() < 6, reason="no abstract-socket scope on this kernel")
def test_network_on_bwrap_commands_keep_the_abstract_socket_scope(tmp_path: Path) -> None:
    # With the host's network namespace shared, only the scope closes host abstract sockets.
    assert _prepared_preexec(tmp_path, network=True) is not None
