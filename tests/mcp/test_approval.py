"""Approval of MCP calls under exec's forced `never`, as Codex decides it: a call that would
need approval fails with Codex's message (the model reads it, the run goes on); per-tool and
per-server modes and the full-access sandbox let calls run."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import exec_args, run_cli
from tests.mcp.conftest import server_flags
from tests.support.model_server import ModelServer, call, reply
from tests.support.model_server.bodies import tool_outputs

REFUSED = "MCP tool call requires approval, but approval policy is never"


def _call(server: str, tool: str) -> object:
    arguments = {"lookup": {"key": "k"}, "echo": {"text": "t"}}.get(tool, {})
    return call(f"mcp__{server}__{tool}", arguments, call_id=f"{server}-{tool}")


def _run(model_server: ModelServer, repo: Path, *flags: str) -> dict[str, dict[str, object]]:
    tools = [("mini", "delete_all"), ("mini", "lookup"), ("mini", "echo")]
    tools += [("mini", "save_note"), ("mini", "tidy_cache")]
    tools += [("strict", "delete_all"), ("strict", "echo")]
    model_server.enqueue(
        reply(tool_calls=[_call(server, tool) for server, tool in tools]),  # type: ignore[misc]
        reply("done"),
    )
    # `strict` asks for every tool (`prompt`) except the one it approves outright.
    strict = server_flags(
        "strict",
        default_tools_approval_mode="prompt",
        **{"tools.delete_all.approval_mode": "approve"},
    )
    args = [*exec_args(model_server), "-s", "workspace-write", *server_flags(), *strict]
    result = run_cli([*args, *flags, "go"], cwd=repo)
    assert result.returncode == 0, result.stderr
    return {f"{item['server']}.{item['tool']}": item for item in result.items("mcp_tool_call")}


def test_codex_rule_under_never(model_server: ModelServer, repo: Path) -> None:
    items = _run(model_server, repo)
    refused = items["mini.delete_all"]  # annotated destructive, mode `auto`
    assert (refused["status"], refused["error"], refused["result"]) == (
        "failed",
        {"message": REFUSED},
        None,
    )
    assert tool_outputs(model_server.bodies[1])["mini-delete_all"] == REFUSED
    assert items["mini.lookup"]["status"] == "completed"  # read-only
    assert items["mini.echo"]["status"] == "completed"  # no annotations: Codex runs it
    # Annotated, with openWorldHint left out: MCP's default (open world) needs approval.
    assert items["mini.save_note"]["error"] == {"message": REFUSED}
    assert items["mini.tidy_cache"]["status"] == "completed"  # says: closed world
    assert items["strict.echo"]["error"] == {"message": REFUSED}  # the server's `prompt`
    assert items["strict.delete_all"]["status"] == "completed"  # its own `approve`


def test_the_bypass_flag_runs_every_call(model_server: ModelServer, repo: Path) -> None:
    items = _run(model_server, repo, "--dangerously-bypass-approvals-and-sandbox")
    assert {item["status"] for item in items.values()} == {"completed"}
