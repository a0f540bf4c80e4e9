"""`interpreter sandbox doctor` says MCP servers run outside the command sandbox."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli


def test_doctor_names_the_servers_that_run_unsandboxed(repo: Path, oi_home: Path) -> None:
    (oi_home / "config.toml").write_text(
        '[mcp_servers.docs]\ncommand = "docs-server"\n'
        '[mcp_servers.off]\ncommand = "off-server"\nenabled = false\n'
    )
    text = run_cli(["sandbox", "doctor"], cwd=repo)
    assert (
        "mcp:      MCP servers (and every process they start) run outside this sandbox: docs\n"
        in text.stdout
    )
    report = json.loads(run_cli(["sandbox", "doctor", "--json"], cwd=repo).stdout)
    assert report["mcp"]["servers"] == ["docs"] and report["mcp"]["outside_sandbox"] is True
