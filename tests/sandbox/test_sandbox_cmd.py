"""`interpreter sandbox -- CMD` keeps the shell's exit-status conventions (127 for a command
that does not exist, not 125 "sandbox setup failed"), and `sandbox doctor` prints its report
on stdout, leaving stderr for errors."""

from __future__ import annotations

import json

import pytest

from tests.sandbox.conftest import Box


@pytest.mark.parametrize("backend", ["bwrap", "landlock"])
def test_a_missing_command_exits_127_command_not_found(box: Box, backend: str) -> None:
    env = {"OI_SANDBOX_FAULTS": "no-userns"} if backend == "landlock" else {}
    args = ["--require", "any"] if backend == "landlock" else []
    result = box.cli([*args, "--", "no-such-command-oiexec"], backend=backend, env=env)

    assert result.returncode == 127, result.stderr
    assert "no-such-command-oiexec: command not found" in result.stderr
    assert "sandbox setup failed" not in result.stderr
    assert result.stdout == ""


def test_a_missing_path_exits_127_and_a_real_command_keeps_its_status(box: Box) -> None:
    missing = box.cli(["--", "./not-here.sh"])
    assert missing.returncode == 127
    assert "./not-here.sh: no such file or directory" in missing.stderr

    real = box.cli(["--", "sh", "-c", "echo ran; exit 3"])
    assert (real.returncode, real.stdout) == (3, "ran\n"), real.stderr


def test_doctor_prints_its_report_on_stdout(box: Box) -> None:
    result = box.cli(["doctor"])

    assert result.returncode == 0, result.stdout
    assert "result:   OK, the mode can be enforced" in result.stdout
    assert "backend:" in result.stdout
    assert result.stderr == ""


def test_a_failing_doctor_still_reports_on_stdout_with_exit_6(box: Box) -> None:
    env = {"OI_SANDBOX_FAULTS": "no-userns,no-landlock"}
    text = box.cli(["doctor"], env=env)
    as_json = box.cli(["doctor", "--json"], env=env)

    assert text.returncode == 6 and as_json.returncode == 6
    assert "result:   FAIL, this mode cannot be enforced here" in text.stdout
    assert json.loads(as_json.stdout)["ok"] is False
    assert text.stderr == "" and as_json.stderr == ""
