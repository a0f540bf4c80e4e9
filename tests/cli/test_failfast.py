"""Everything that can be checked without the prompt fails before stdin is read: a CI job
piping a slow producer into `interpreter exec` learns about a typo at once, not when the
producer ends. And the warnings found first are printed before the error they explain."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import exec_args, run_cli
from tests.support.model_server import ModelServer, reply


def _run_with_open_stdin(
    args: list[str], cwd: Path, env: dict[str, str] | None = None
) -> tuple[int, str]:
    """Runs the CLI with a stdin pipe that is never written nor closed; returns once the
    process exits on its own (a process that waits for stdin hangs here and the test fails
    on the guard timeout)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "oiexec", *args],
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    try:
        code = proc.wait(timeout=30)
        assert proc.stdin is not None and not proc.stdin.closed  # still open: never sent EOF
        assert proc.stderr is not None
        return code, proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


@pytest.mark.parametrize(
    ("extra", "code", "message"),
    [
        (["-c", "model=123"], 3, "`model` in -c override"),
        (["-c", "model_provider=nowhere"], 3, "nowhere"),
        (["--output-schema", "missing.json"], 2, "Failed to read output schema file"),
        (["-i", "missing.png"], 2, "--image missing.png"),
        (["-p", "no-such-profile"], 3, "no-such-profile"),
        (["-C", "no-such-dir"], 2, "no such directory"),
    ],
)
def test_a_bad_flag_or_config_fails_before_stdin_is_read(
    model_server: ModelServer, repo: Path, extra: list[str], code: int, message: str
) -> None:
    # No prompt argument: the prompt would come from stdin, which never ends.
    exit_code, stderr = _run_with_open_stdin([*exec_args(model_server), *extra], repo)
    assert exit_code == code, stderr
    assert message in stderr
    assert "Reading prompt from stdin" not in stderr
    assert model_server.requests == []


def test_missing_key_and_git_check_fail_before_stdin_is_read(repo: Path, tmp_path: Path) -> None:
    exit_code, stderr = _run_with_open_stdin(["exec", "x"], repo)
    assert exit_code == 3, stderr
    assert "OPENAI_API_KEY" in stderr and "Reading additional input" not in stderr

    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    exit_code, stderr = _run_with_open_stdin(["exec", "-"], outside)
    assert exit_code == 2, stderr
    assert "--skip-git-repo-check" in stderr and "Reading prompt" not in stderr


def test_an_unusable_sandbox_set_up_fails_before_stdin_is_read(
    model_server: ModelServer, repo: Path
) -> None:
    """The sandbox backend is chosen before the prompt is read; a stray test-only hook in a
    CI job's environment is refused at once."""
    env = {"OI_SANDBOX_FAULTS": "no-userns", "OIEXEC_SANDBOX_TEST_HOOKS": ""}
    args = [*exec_args(model_server), "-s", "workspace-write", "-"]
    exit_code, stderr = _run_with_open_stdin(args, repo, env)
    assert exit_code == 3, stderr
    assert "OI_SANDBOX_FAULTS" in stderr and "Reading prompt" not in stderr


def test_resume_without_a_session_fails_before_stdin_is_read(
    model_server: ModelServer, repo: Path
) -> None:
    exit_code, stderr = _run_with_open_stdin(
        [*exec_args(model_server), "resume", "--last", "-"], repo
    )
    assert exit_code == 2, stderr
    assert "Reading prompt" not in stderr


def test_the_prompt_is_still_read_once_the_checks_pass(
    model_server: ModelServer, repo: Path
) -> None:
    model_server.enqueue(reply("done"))
    result = run_cli([*exec_args(model_server), "-"], cwd=repo, input="task from stdin")
    assert result.returncode == 0, result.stderr
    assert "task from stdin" in str(model_server.bodies[0])


@pytest.mark.parametrize("json_mode", [False, True])
def test_warnings_come_before_the_error_they_explain(
    repo: Path, oi_home: Path, json_mode: bool
) -> None:
    """A misspelt `model_provider` leaves the default provider, whose key is missing: the
    user must see the typo next to the error, not only the error."""
    (oi_home / "config.toml").write_text('model_provder = "openrouter"\n')
    args = ["exec", *(["--json"] if json_mode else []), "x"]
    result = run_cli(args, cwd=repo)
    assert result.returncode == 3, result.stderr
    lines = result.stderr.splitlines()
    warning = next(i for i, line in enumerate(lines) if "model_provder" in line)
    error = next(i for i, line in enumerate(lines) if line.startswith("Error:"))
    assert lines[warning].startswith("warning: ignoring unknown config key `model_provder`")
    assert warning < error and "OPENAI_API_KEY" in lines[error]
    # No thread started: the JSON stream holds only the failure.
    assert result.types() == (["turn.failed"] if json_mode else [])


def test_warnings_are_shown_once_when_the_run_starts(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(reply("done"))
    result = run_cli([*exec_args(model_server), "-c", "model_provder=x", "go"], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("model_provder") == 1
    assert [i["message"] for i in result.items("error")] == [
        "ignoring unknown config key `model_provder` (-c override)"
    ]


def test_a_stdin_error_after_the_checks_still_shows_the_warnings(
    model_server: ModelServer, repo: Path
) -> None:
    result = run_cli(
        [*exec_args(model_server), "-c", "model_provder=x", "-"], cwd=repo, input="  \n"
    )
    assert result.returncode == 2, result.stderr
    assert "No prompt provided via stdin" in result.stderr
    assert result.stderr.index("model_provder") < result.stderr.index("No prompt provided")


def test_a_warning_from_the_same_config_load_comes_before_its_error(
    repo: Path, oi_home: Path
) -> None:
    (oi_home / "config.toml").write_text('model_provder = "openrouter"\nmodel = 5\n')
    result = run_cli(["exec", "x"], cwd=repo)
    assert result.returncode == 3, result.stderr
    assert "Error:" in result.stderr
    warning = result.stderr.index("warning: ignoring unknown config key `model_provder`")
    assert warning < result.stderr.index("Error:")
