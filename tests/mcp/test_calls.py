"""MCP tool calls through the real CLI and the scripted model (native harness): the
`mcp_tool_call` items as `codex exec --json` prints them, and what the model reads next."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import exec_args, run_cli
from tests.mcp.conftest import server_flags
from tests.support.model_server import ModelServer, call, reply
from tests.support.model_server.bodies import tool_outputs


def test_a_call_is_an_mcp_tool_call_item_and_its_result_reaches_the_model(
    model_server: ModelServer, repo: Path
) -> None:
    model_server.enqueue(
        reply(tool_calls=[call("mcp__mini__echo", {"text": "hello"}, call_id="c1")]),
        reply("done"),
    )
    result = run_cli([*exec_args(model_server), *server_flags(), "say hello"], cwd=repo)
    assert result.returncode == 0, result.stderr
    started = result.items("mcp_tool_call", "item.started")
    completed = result.items("mcp_tool_call")
    assert started == [
        {
            "id": "item_0",
            "type": "mcp_tool_call",
            "server": "mini",
            "tool": "echo",
            "arguments": {"text": "hello"},
            "result": None,
            "error": None,
            "status": "in_progress",
        }
    ]
    # Codex's line, field for field (codex-exec.md §3.3).
    assert completed == [
        {
            "id": "item_0",
            "type": "mcp_tool_call",
            "server": "mini",
            "tool": "echo",
            "arguments": {"text": "hello"},
            "result": {
                "content": [{"type": "text", "text": "echo: hello"}],
                "structured_content": None,
            },
            "error": None,
            "status": "completed",
        }
    ]
    assert tool_outputs(model_server.bodies[1])["c1"] == "echo: hello"
