"""Servers configured by the project itself start only in a trusted project."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import exec_args, run_cli
from tests.mcp.conftest import MINI, REPO_ROOT, toml
from tests.support.model_server import ModelServer, reply


@pytest.mark.parametrize("trusted", [False, True], ids=["untrusted", "trusted"])
def test_project_servers_start_only_when_trusted(
    model_server: ModelServer, repo: Path, oi_home: Path, tmp_path: Path, trusted: bool
) -> None:
    pidfile = tmp_path / "pid"
    (repo / ".openinterpreter").mkdir()
    (repo / ".openinterpreter" / "config.toml").write_text(
        "[mcp_servers.proj]\n"
        f"command = {toml(sys.executable)}\n"
        f"args = {toml(['-m', MINI, '--pidfile', str(pidfile)])}\n"
        f"cwd = {toml(str(REPO_ROOT))}\n"
    )
    if trusted:
        (oi_home / "config.toml").write_text(
            f'[projects.{toml(str(repo))}]\ntrust_level = "trusted"\n'
        )
    model_server.enqueue(reply("done"))
    result = run_cli([*exec_args(model_server), "go"], cwd=repo)
    assert result.returncode == 0, result.stderr
    # The server wrote its pid when it started: only in the trusted project.
    assert pidfile.exists() is trusted
    if not trusted:
        assert "mcp__proj__" not in str(model_server.bodies[0])
