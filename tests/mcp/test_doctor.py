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


def test_doctor_names_hooks_and_notify_that_run_unsandboxed(repo: Path, oi_home: Path) -> None:
    (oi_home / "config.toml").write_text(
        'notify = ["notify-send", "done"]\n'
        '[[hooks.PreToolUse]]\nhooks = [{ command = "guard.sh" }]\n'
    )
    (oi_home / "hooks.json").write_text(
        '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "stop.sh"}]}]}}'
    )
    text = run_cli(["sandbox", "doctor"], cwd=repo).stdout
    assert "hooks:    hook commands run outside this sandbox: 2 configured here\n" in text
    assert "notify:   the notify program runs outside this sandbox: notify-send\n" in text
    report = json.loads(run_cli(["sandbox", "doctor", "--json"], cwd=repo).stdout)
    assert report["hooks"]["commands"] == ["guard.sh", "stop.sh"]
    assert report["notify"]["command"] == ["notify-send", "done"]
