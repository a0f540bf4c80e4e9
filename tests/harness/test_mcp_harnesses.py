"""MCP tools through three harnesses, end to end: the real CLI starts the real test MCP server
(tests/support/mcp_servers/mini.py), the scripted model sees the tools as each product offers
them, calls one, and reads its text and image in its wire's shape; the JSONL stream carries
Codex's `mcp_tool_call` items. Also: tool_search deferral (and resume keeping what a search
loaded), web_search on the Responses wire, and the warning of a harness without function
calling."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult, exec_args, run_cli
from tests.support import model_server as ms
from tests.support.model_server import ModelServer

ROOT = Path(__file__).resolve().parents[2]
PNG_PREFIX = "data:image/png;base64,iVBORw0KGgo"


def _mcp_args() -> list[str]:
    return [
        "-c",
        f"mcp_servers.mini.command={json.dumps(sys.executable)}",
        "-c",
        'mcp_servers.mini.args=["-m", "tests.support.mcp_servers.mini"]',
        "-c",
        f"mcp_servers.mini.cwd={json.dumps(str(ROOT))}",
    ]


def _run(server: ModelServer, repo: Path, wire: str, *extra: str, prompt: str = "go") -> CliResult:
    result = run_cli([*exec_args(server, wire=wire), *_mcp_args(), *extra, prompt], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert server.remaining == 0, "the run ended before the script did"
    return result


def _tool(body: dict[str, Any], name: str) -> dict[str, Any]:
    for tool in body.get("tools") or []:
        if tool.get("name") == name or (tool.get("function") or {}).get("name") == name:
            return dict(tool)
    raise AssertionError(f"{name} not offered: {ms.tool_names(body)}")


def _image_call(result: CliResult) -> dict[str, Any]:
    calls = result.items("mcp_tool_call")
    assert [(c["server"], c["tool"], c["status"]) for c in calls] == [
        ("mini", "image", "completed")
    ]
    started = result.items("mcp_tool_call", "item.started")
    assert started and started[0]["status"] == "in_progress"
    return calls[0]


def test_native_offers_codex_functions_and_returns_images_as_output_parts(
    model_server: ModelServer, repo: Path
) -> None:
    model_server.enqueue(
        ms.reply(tool_calls=[ms.call("mcp__mini__image", {}, call_id="c1")]),
        ms.reply("saw it"),
    )
    result = _run(model_server, repo, "responses", "-c", 'harness="native"')

    first, second = model_server.bodies
    echo = _tool(first, "mcp__mini__echo")
    assert echo["type"] == "function"
    assert echo["description"] == "Echo the text back."
    assert echo["strict"] is False
    assert echo["parameters"]["properties"]["text"]["type"] == "string"
    # Without tool_search enabled by many tools, nothing is deferred.
    assert "tool_search" not in ms.tool_names(first)

    output = next(i for i in second["input"] if i.get("type") == "function_call_output")
    assert output["call_id"] == "c1"
    parts = output["output"]
    assert parts[0] == {"type": "input_text", "text": "a red dot"}
    assert parts[1]["type"] == "input_image"
    assert parts[1]["image_url"].startswith(PNG_PREFIX)
    call = _image_call(result)
    assert [block["type"] for block in call["result"]["content"]] == ["text", "image"]


def test_claude_code_returns_images_as_tool_result_blocks(
    model_server: ModelServer, repo: Path
) -> None:
    model_server.enqueue(
        ms.reply(tool_calls=[ms.call("mcp__mini__image", {}, call_id="toolu_1")]),
        ms.reply("saw it"),
    )
    result = _run(model_server, repo, "messages", "-c", 'harness="claude-code"')

    first, second = model_server.bodies
    echo = _tool(first, "mcp__mini__echo")
    assert echo["description"] == "Echo the text back."
    assert echo["input_schema"]["properties"]["text"]["type"] == "string"

    results = [
        block
        for message in second["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    content = results[-1]["content"]
    assert content[0] == {"type": "text", "text": "a red dot"}
    assert content[1]["type"] == "image"
    assert content[1]["source"]["type"] == "base64"
    assert content[1]["source"]["media_type"] == "image/png"
    assert content[1]["source"]["data"].startswith("iVBORw0KGgo")
    _image_call(result)


def test_qwen_code_sends_the_text_as_the_tool_message_and_the_image_after_it(
    model_server: ModelServer, repo: Path
) -> None:
    model_server.enqueue(
        ms.reply(tool_calls=[ms.call("mcp__mini__image", {}, call_id="call_1")]),
        ms.reply("saw it"),
    )
    result = _run(model_server, repo, "chat", "-c", 'harness="qwen-code"')

    first, second = model_server.bodies
    echo = _tool(first, "mcp__mini__echo")["function"]
    assert echo["description"] == "Echo the text back."
    assert "$schema" not in json.dumps(echo["parameters"])

    messages = second["messages"]
    index = next(i for i, m in enumerate(messages) if m.get("role") == "tool")
    assert messages[index]["tool_call_id"] == "call_1"
    assert "a red dot" in json.dumps(messages[index]["content"])
    after = messages[index + 1]
    assert after["role"] == "user"
    images = [part for part in after["content"] if part["type"] == "image_url"]
    assert len(images) == 1 and images[0]["image_url"]["url"].startswith(PNG_PREFIX)
    _image_call(result)


def test_tool_search_loads_deferred_tools_and_resume_keeps_them(
    model_server: ModelServer, repo: Path
) -> None:
    defer = ("-c", "features.tool_search_always_defer_mcp_tools=true")
    model_server.enqueue(
        # Named before any search loaded it: refused, as Codex refuses it.
        ms.reply(tool_calls=[ms.call("mcp__mini__echo", {"text": "early"}, call_id="e0")]),
        ms.reply(tool_calls=[ms.call("tool_search", {"query": "echo text"}, call_id="s1")]),
        ms.reply(tool_calls=[ms.call("mcp__mini__echo", {"text": "hi"}, call_id="e1")]),
        ms.reply("done"),
    )
    result = _run(model_server, repo, "responses", *defer)

    first, early, second, third = model_server.bodies
    assert "tool_search" in ms.tool_names(first)
    assert not [name for name in ms.tool_names(first) if name.startswith("mcp__mini__")]
    assert "`mcp__mini__echo` is not loaded" in ms.tool_outputs(early)["e0"]
    search = _tool(first, "tool_search")
    assert "mini" in search["description"]
    found = json.loads(ms.tool_outputs(second)["s1"])["tools"]
    assert found[0]["name"] == "mcp__mini__echo"
    offered = ms.tool_names(second)
    assert "mcp__mini__echo" in offered
    assert "mcp__mini__crash" not in offered
    assert ms.tool_outputs(third)["e1"] == "echo: hi"
    assert [c["tool"] for c in result.items("mcp_tool_call")] == ["echo"]

    model_server.enqueue(ms.reply("still here"))
    resumed = run_cli(
        [*exec_args(model_server), *_mcp_args(), *defer, "resume", "--last", "again"], cwd=repo
    )
    assert resumed.returncode == 0, resumed.stderr
    again = model_server.bodies[-1]
    assert "mcp__mini__echo" in ms.tool_names(again)
    assert "mcp__mini__crash" not in ms.tool_names(again)


def test_an_unknown_tool_call_does_not_name_the_deferred_tools(
    model_server: ModelServer, repo: Path
) -> None:
    model_server.enqueue(
        ms.reply(tool_calls=[ms.call("no_such_tool", {}, call_id="u1")]), ms.reply("done")
    )
    _run(model_server, repo, "responses", "-c", "features.tool_search_always_defer_mcp_tools=true")
    answer = ms.tool_outputs(model_server.bodies[1])["u1"]
    assert "there is no tool named `no_such_tool`" in answer and "tool_search" in answer
    assert "mcp__mini__" not in answer


@pytest.mark.parametrize(
    ("setting", "live"),
    [
        ('web_search="live"', True),
        ('web_search="cached"', False),
        ("features.web_search_request=true", True),
    ],
)
def test_web_search_sends_codex_hosted_tool_on_responses(
    model_server: ModelServer, repo: Path, setting: str, live: bool
) -> None:
    model_server.enqueue(ms.reply("ok"))
    result = run_cli([*exec_args(model_server), "-c", setting, "hi"], cwd=repo)
    assert result.returncode == 0, result.stderr
    hosted = [t for t in model_server.bodies[0]["tools"] if t.get("type") == "web_search"]
    assert hosted == [
        {
            "type": "web_search",
            "external_web_access": live,
            "search_content_types": ["text", "image"],
        }
    ]


def test_web_search_is_not_sent_where_it_cannot_work(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(ms.reply("ok"), ms.reply("ok"))
    for extra in (("-c", 'web_search="disabled"'), ("-c", 'harness="claude-code"')):
        args = [*exec_args(model_server), "-c", 'web_search="live"', *extra, "hi"]
        assert run_cli(args, cwd=repo).returncode == 0
    for body in model_server.bodies:
        assert "web_search" not in ms.tool_names(body)


def test_a_harness_without_function_calls_says_it_cannot_offer_mcp_tools(
    model_server: ModelServer, repo: Path
) -> None:
    model_server.enqueue(
        ms.reply(
            "THOUGHT: done.\n\n```mswea_bash_command\n"
            "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && echo fin\n```"
        )
    )
    result = _run(model_server, repo, "chat", "-c", 'harness="mini-swe-agent-text"')
    assert result.stderr.count("mini-swe-agent-text") >= 1
    warning = [line for line in result.stderr.splitlines() if "MCP server" in line]
    assert len(warning) == 1
    assert "`mini-swe-agent-text`" in warning[0]
    assert "of MCP server `mini` are not offered" in warning[0]
    assert "tools" not in model_server.bodies[0] or not model_server.bodies[0]["tools"]
