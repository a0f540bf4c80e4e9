"""Simulated host failures each give the documented diagnosis; setup failures are told apart
from command exit codes; a missing bwrap fails this suite rather than skipping it."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

from tests.sandbox.conftest import Box


def _doctor(box: Box, *args: str, **env: str) -> tuple[int, dict[str, object]]:
    result = box.cli(["doctor", "--json", *args], env=env)
    return result.returncode, json.loads(result.stdout)


def test_bwrap_is_installed_and_selected(box: Box) -> None:
    # CI installs bubblewrap; without it the full backend is untested, so this must fail.
    assert shutil.which("bwrap") or os.path.exists("/usr/bin/bwrap"), "install bubblewrap"
    rc, report = _doctor(box)
    assert rc == 0
    assert report["backend"] == "bwrap"
    assert report["enforced"]["protected_paths"] is True  # type: ignore[index]


def test_no_user_namespaces_falls_back_to_degraded_landlock(box: Box) -> None:
    rc, report = _doctor(box, "--require", "any", OI_SANDBOX_FAULTS="no-userns")
    assert rc == 0
    assert report["backend"] == "landlock"
    assert any("tripwire" in d for d in report["degraded"])  # type: ignore[attr-defined]
    assert "No permissions to create new namespace" in str(report["reason"])


def test_require_full_refuses_landlock(box: Box) -> None:
    rc, report = _doctor(box, "--require", "full", OI_SANDBOX_FAULTS="no-userns")
    assert rc == 6
    assert report["backend"] == "unavailable"
    assert 'sandbox_require = "full"' in str(report["reason"])


def test_no_backend_refuses_to_run_with_fixes(box: Box) -> None:
    marker = box.root / "ran"
    result = box.cli(
        ["-s", "workspace-write", "--", "/bin/sh", "-c", f"touch {marker}"],
        env={"OI_SANDBOX_FAULTS": "no-userns,no-landlock"},
    )
    assert result.returncode == 6
    assert not marker.exists()
    assert "sandbox unavailable" in result.stderr
    assert "No permissions to create new namespace" in result.stderr
    assert "Landlock" in result.stderr
    assert "danger-full-access" in result.stderr  # the explicit opt-out for isolated hosts
    rc, report = _doctor(box, OI_SANDBOX_FAULTS="no-userns,no-landlock")
    assert rc == 6 and report["backend"] == "unavailable"


def test_proc_not_mountable_runs_without_proc_and_says_so(box: Box) -> None:
    rc, report = _doctor(box, OI_SANDBOX_FAULTS="no-proc")
    assert rc == 0
    assert report["backend"] == "bwrap"
    assert any("/proc" in d for d in report["degraded"])  # type: ignore[attr-defined]
    result = box.cli(
        ["-s", "read-only", "--", "/bin/sh", "-c", "echo ran"],
        env={"OI_SANDBOX_FAULTS": "no-proc"},
    )
    assert result.stdout == "ran\n", result.stderr


def _fake_bwrap(box: Box, body: str) -> Path:
    path = box.root / "fake-bwrap"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def test_fake_bwrap_refusing_namespaces_is_diagnosed_by_running_it(box: Box) -> None:
    fake = _fake_bwrap(box, 'echo "bwrap: setting up uid map: Permission denied" >&2; exit 1\n')
    rc, report = _doctor(box, "--require", "any", OI_SANDBOX_BWRAP=str(fake))
    assert rc == 0 and report["backend"] == "landlock"
    assert "setting up uid map" in str(report["reason"])


def test_setup_failure_is_not_the_command_exit_code(box: Box) -> None:
    # Passes the preflight (reports exit-code 0 for /bin/true), fails for real commands.
    fake = _fake_bwrap(
        box,
        'for a; do [ "$prev" = --json-status-fd ] && fd=$a; prev=$a; last=$a; done\n'
        'if [ "$last" = /bin/true ]; then eval "echo \'{\\"exit-code\\": 0}\' >&$fd"; exit 0; fi\n'
        'echo "bwrap: Can\'t mount tmpfs: No space left on device" >&2; exit 1\n',
    )
    result = box.cli(
        ["-s", "read-only", "--", "/bin/sh", "-c", "exit 1"], env={"OI_SANDBOX_BWRAP": str(fake)}
    )
    assert result.returncode == 125
    assert "sandbox setup failed" in result.stderr
    real = box.cli(["-s", "read-only", "--", "/bin/sh", "-c", "exit 1"])
    assert real.returncode == 1  # a real command failure stays 1


def test_root_runner_refuses_degraded_landlock_by_default(box: Box) -> None:
    """`sandbox_require = "auto"`: as root a sandbox gap is a gap to host root, so the
    degraded backend needs an explicit `--require any`; other users get it with a warning."""
    rc, report = _doctor(box, OI_SANDBOX_FAULTS="no-userns")
    if box.who == "root":
        assert rc == 6 and report["backend"] == "unavailable"
        assert "sandbox_require" in str(report["reason"])
    else:
        assert rc == 0 and report["backend"] == "landlock"


def test_test_hooks_are_refused_outside_the_test_suite(box: Box) -> None:
    marker = box.root / "ran"
    for name, value in (("OI_SANDBOX_FAULTS", "no-userns"), ("OI_SANDBOX_BWRAP", "/bin/true")):
        result = box.cli(
            ["-s", "read-only", "--", "/bin/sh", "-c", f"touch {marker}"],
            env={name: value, "OIEXEC_SANDBOX_TEST_HOOKS": ""},
        )
        assert result.returncode == 3, result.stderr
        assert name in result.stderr and "test-only" in result.stderr
        assert "Traceback" not in result.stderr
    retired = box.cli(["-s", "read-only", "--", "true"], env={"OI_SANDBOX_BACKEND": "landlock"})
    assert retired.returncode == 3 and "sandbox_backend" in retired.stderr
    assert not marker.exists()


def test_backend_key_chooses_landlock_for_exec_and_sandbox(box: Box) -> None:
    rc, report = _doctor(box, "--backend", "landlock", "--require", "any")
    assert rc == 0 and report["backend"] == "landlock"
    assert "sandbox_backend" in str(report["reason"])
