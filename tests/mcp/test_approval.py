"""Approval of MCP calls under exec's forced `never`, as Codex decides it: a call that would
need approval fails with Codex's message (the model reads it, the run goes on); per-tool and
per-server modes and the full-access sandbox let calls run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import exec_args, run_cli
from tests.mcp.conftest import server_flags
from tests.support.model_server import ModelServer, call, reply
from tests.support.model_server.bodies import tool_outputs

REFUSED = "MCP tool call requires approval, but approval policy is never"


def _calls(*tools: str) -> list[object]:
    return [
        call(
            f"mcp__mini__{tool}",
            {"key": "k"} if tool == "lookup" else ({"text": "t"} if tool == "echo" else {}),
            call_id=tool,
        )
        for tool in tools
    ]


def _run(model_server: ModelServer, repo: Path, *flags: str) -> dict[str, dict[str, object]]:
    model_server.enqueue(
        reply(tool_calls=_calls("delete_all", "lookup", "echo")),  # type: ignore[arg-type]
        reply("done"),
    )
    args = exec_args(model_server)
    result = run_cli([*args, "-s", "workspace-write", *flags, "go"], cwd=repo)
    assert result.returncode == 0, result.stderr
    return {item["tool"]: item for item in result.items("mcp_tool_call")}


def test_a_destructive_tool_is_refused_others_run(model_server: ModelServer, repo: Path) -> None:
    items = _run(model_server, repo, *server_flags())
    refused = items["delete_all"]
    assert refused["status"] == "failed"
    assert refused["error"] == {"message": REFUSED}
    assert refused["result"] is None
    assert items["lookup"]["status"] == "completed"  # read-only
    assert items["echo"]["status"] == "completed"  # no annotations: Codex runs it
    assert tool_outputs(model_server.bodies[1])["delete_all"] == REFUSED


@pytest.mark.parametrize(
    ("flags", "delete_runs", "echo_runs"),
    [
        # A per-tool `approve` lets the one tool run.
        (server_flags(**{"tools.delete_all.approval_mode": "approve"}), True, True),
        # `prompt` as the server's default refuses every tool without its own mode.
        (server_flags(default_tools_approval_mode="prompt"), False, False),
        # The bypass flag (full access) runs everything.
        (
            [
                *server_flags(default_tools_approval_mode="prompt"),
                "--dangerously-bypass-approvals-and-sandbox",
            ],
            True,
            True,
        ),
    ],
    ids=["per-tool-approve", "server-prompt", "bypass"],
)
def test_configured_modes_and_bypass(
    model_server: ModelServer, repo: Path, flags: list[str], delete_runs: bool, echo_runs: bool
) -> None:
    items = _run(model_server, repo, *flags)
    assert (items["delete_all"]["status"] == "completed") is delete_runs
    assert (items["echo"]["status"] == "completed") is echo_runs
    if not echo_runs:
        assert items["echo"]["error"] == {"message": REFUSED}
