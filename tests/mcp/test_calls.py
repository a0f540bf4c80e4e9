"""MCP tool calls through the real CLI and the scripted model (native harness): the
`mcp_tool_call` items as `codex exec --json` prints them, and what the model reads next."""

from __future__ import annotations

import json
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
        reply(tool_calls=[call("mcp__mini__big", {"size": 100_000}, call_id="c2")]),
        reply("done"),
    )
    limit = ("-c", "tool_output_token_limit=500")
    result = run_cli([*exec_args(model_server), *server_flags(), *limit, "say hello"], cwd=repo)
    assert result.returncode == 0, result.stderr
    started = result.items("mcp_tool_call", "item.started")[:1]
    completed, big = result.items("mcp_tool_call")
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
    assert [completed] == [
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
    # A huge result is cut for the model as a command's output is (head and tail kept);
    # the item keeps all of it, as Codex's does.
    whole = big["result"]["content"][0]["text"]
    assert len(whole) == 100_000
    read = tool_outputs(model_server.bodies[2])["c2"]
    assert read.startswith(whole[:500]) and read.endswith(whole[-500:])
    assert "tokens truncated" in read and len(read) < 2_100


def test_images_structured_content_resources_and_elicitation(
    model_server: ModelServer, repo: Path
) -> None:
    model_server.enqueue(
        reply(
            tool_calls=[
                call("mcp__mini__image", {}, call_id="img"),
                call("mcp__mini__structured", {"city": "Oslo"}, call_id="st"),
                call("list_mcp_resources", {}, call_id="l"),
                call("read_mcp_resource", {"server": "mini", "uri": "note://readme"}, call_id="r"),
                call("mcp__mini__ask", {}, call_id="a"),
            ]
        ),
        reply("done"),
    )
    result = run_cli([*exec_args(model_server), *server_flags(), "look"], cwd=repo)
    assert result.returncode == 0, result.stderr
    image, structured, listed, read, _ask = result.items("mcp_tool_call")
    blocks = image["result"]["content"]
    assert blocks[0] == {"type": "text", "text": "a red dot"}
    assert blocks[1]["type"] == "image" and blocks[1]["mimeType"] == "image/png"
    assert structured["result"]["structured_content"] == {"city": "Oslo", "temperature": 21}
    sent = model_server.bodies[1]
    outputs = tool_outputs(sent)
    # Structured content is what the model reads, as JSON (Codex's rule).
    assert outputs["st"] == '{"city": "Oslo", "temperature": 21}'
    assert "a red dot" in outputs["img"]
    # The picture itself travels to the model (how is the wire's business).
    assert "data:image/png;base64," + blocks[1]["data"] in json.dumps(sent)

    # Codex's resource tools, reported as mcp_tool_call items too.
    assert (listed["server"], listed["tool"], listed["status"]) == (
        "codex",
        "list_mcp_resources",
        "completed",
    )
    assert (read["server"], read["tool"], read["status"]) == (
        "mini",
        "read_mcp_resource",
        "completed",
    )
    resources = json.loads(outputs["l"])["resources"]
    assert [(r["server"], r["uri"]) for r in resources] == [("mini", "note://readme")]
    assert json.loads(outputs["r"])["contents"][0]["text"] == "mini is a test server"

    # Nobody can answer a server's question in exec: it is cancelled, as Codex does.
    assert outputs["a"] == "the user answered: cancel"


def test_timeout_crash_and_a_dead_server_are_failed_items_the_run_goes_on(
    model_server: ModelServer, repo: Path
) -> None:
    model_server.enqueue(
        reply(tool_calls=[call("mcp__mini__slow", {"seconds": 5}, call_id="s")]),
        reply(tool_calls=[call("mcp__mini__fail", {}, call_id="f")]),
        reply(tool_calls=[call("mcp__mini__crash", {}, call_id="c")]),
        reply(tool_calls=[call("mcp__mini__echo", {"text": "anyone?"}, call_id="e")]),
        reply("gave up"),
    )
    flags = server_flags(tool_timeout_sec=0.5)
    result = run_cli([*exec_args(model_server), *flags, "try"], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert result.types()[-1] == "turn.completed"
    slow, fail, crash, echo = result.items("mcp_tool_call")
    assert slow["status"] == "failed" and slow["result"] is None
    # Codex's message, word for word (its duration printed as Rust prints one).
    assert slow["error"] == {
        "message": "tool call error: tool call failed for `mini/slow`\n\nCaused by:\n"
        "    timed out awaiting tools/call after 500ms"
    }
    # A tool that reports an error (`isError`) is a failed item that keeps its result.
    assert fail["status"] == "failed" and fail["error"] is None
    assert "failed on purpose" in fail["result"]["content"][0]["text"]
    assert crash["status"] == "failed"
    assert crash["error"]["message"].endswith(
        "Caused by:\n    MCP server `mini` exited with code 3"
    )
    assert echo["status"] == "failed"
    assert "MCP server `mini` is not available" in echo["error"]["message"]
    outputs = {
        call_id: text
        for body in model_server.bodies
        for call_id, text in tool_outputs(body).items()
    }
    assert outputs["s"] == slow["error"]["message"]
    assert "failed on purpose" in outputs["f"]
    assert outputs["c"] == crash["error"]["message"]


def test_transcript_shows_the_call_and_its_outcome(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(reply(tool_calls=[call("mcp__mini__echo", {"text": "hi"})]), reply("done"))
    args = [a for a in exec_args(model_server) if a != "--json"]
    result = run_cli([*args, *server_flags(), "hi"], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert 'tool mini.echo({"text": "hi"})' in result.stderr
    assert 'mini.echo({"text": "hi"}) succeeded' in result.stderr
    assert result.stdout == "done\n"
