"""`review` outside a git repository is a usage error (exit 2) naming the directory and the
fix, not git's raw message (issue 23)."""

from __future__ import annotations

from pathlib import Path

from oiexec.core.errors import ExitCode
from tests.conftest import exec_args, run_cli
from tests.support.model_server import ModelServer


def test_review_outside_a_repository_is_a_usage_error(
    model_server: ModelServer, tmp_path: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    # No repository above the test's directory may be found either.
    env = {"GIT_CEILING_DIRECTORIES": str(tmp_path)}
    config = [arg for arg in exec_args(model_server) if arg not in {"-s", "danger-full-access"}]
    top = run_cli(["review", *config[1:], "--uncommitted"], cwd=plain, env=env)
    # `exec review` with -C names the directory given, from anywhere.
    via_c = run_cli([*config, "-C", str(plain), "review", "--base", "main"], cwd=tmp_path, env=env)
    for result in (top, via_c):
        assert result.returncode == ExitCode.USAGE, result.stderr
        assert f"{plain} is not inside a git repository" in result.stderr
        assert "-C DIR" in result.stderr
        assert "fatal:" not in result.stderr and "rev-parse" not in result.stderr
        assert "Traceback" not in result.stderr
    assert model_server.bodies == []  # refused before the model was asked
