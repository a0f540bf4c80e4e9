"""`interpreter mcp-server` driven by a real MCP client (the SDK's stdio client): it starts
the real CLI, lists the tools, runs a task against the scripted model in a real git repo
(the file the model changed shows up in the returned diff), continues the thread, and turns
bad arguments into tool errors while it keeps serving."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult

from tests.conftest import FIX_PATCH, exec_args, git, run_cli
from tests.support.model_server import ModelServer, apply_patch_call, call, reply, user_texts

Session = Callable[[Client], Awaitable[None]]


def _server_args(server: ModelServer, *extra: str) -> list[str]:
    return ["-m", "oiexec", "mcp-server", *server.config_args(), *extra]


def _serve(server: ModelServer, cwd: Path, body: Session, *extra: str) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=_server_args(server, *extra), env=dict(os.environ), cwd=cwd
    )

    async def main() -> None:
        async with Client(params) as client:
            await body(client)

    anyio.run(main)


def _text(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def test_run_returns_message_exit_code_and_diff_then_reply_continues(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": "echo printed-by-the-run"})]),
        reply(tool_calls=[apply_patch_call(FIX_PATCH)]),
        reply("Fixed add() in calc.py."),
        reply("Yes, the fix is in calc.py."),
    )
    seen: dict[str, Any] = {}

    async def session(client: Client) -> None:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == {"run", "reply", "review", "codex", "codex-reply"}
        assert tools["run"].input_schema["required"] == ["prompt"]
        assert {"prompt", "cwd", "sandbox", "model"} <= set(tools["run"].input_schema["properties"])
        assert set(tools["run"].output_schema["properties"]) == {
            "threadId",
            "content",
            "exitCode",
            "reason",
            "diff",
        }
        progress: list[str] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(message or "")

        first = await client.call_tool(
            "run",
            {"prompt": "fix the test", "cwd": str(repo), "sandbox": "danger-full-access"},
            progress_callback=on_progress,
        )
        seen["progress"] = progress
        seen["first"] = first
        thread_id = first.structured_content["threadId"]
        seen["second"] = await client.call_tool(
            "reply", {"threadId": thread_id, "prompt": "is it fixed?"}
        )

    _serve(model_server, tmp_path, session)

    first: CallToolResult = seen["first"]
    assert not first.is_error, _text(first)
    assert _text(first) == "Fixed add() in calc.py."
    outcome = first.structured_content
    assert outcome["content"] == "Fixed add() in calc.py."
    assert outcome["exitCode"] == 0 and outcome["reason"] is None
    assert "-    return a - b\n+    return a + b" in outcome["diff"]
    assert "return a + b" in (repo / "calc.py").read_text()
    # The caller saw the run's steps as progress notifications while it ran.
    assert seen["progress"][0].startswith("ran `")
    assert "echo printed-by-the-run" in seen["progress"][0]
    assert any(
        message.startswith("changed ") and "calc.py" in message for message in seen["progress"]
    )
    # The run's command output went to the model, not into the protocol channel.
    assert "printed-by-the-run" in json.dumps(model_server.bodies[1])

    second: CallToolResult = seen["second"]
    assert not second.is_error, _text(second)
    assert second.structured_content["threadId"] == outcome["threadId"]
    assert second.structured_content["content"] == "Yes, the fix is in calc.py."
    # The follow-up continued the same conversation: the first prompt is in its request.
    assert "fix the test" in " ".join(user_texts(model_server.bodies[-1]))
    assert "is it fixed?" in " ".join(user_texts(model_server.bodies[-1]))


def test_codex_and_codex_reply_take_codexs_parameters(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    model_server.enqueue(reply("first answer"), reply("second answer"))
    seen: dict[str, CallToolResult] = {}

    async def session(client: Client) -> None:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert "approval-policy" in tools["codex"].input_schema["properties"]
        seen["codex"] = await client.call_tool(
            "codex",
            {
                "prompt": "hello",
                "cwd": str(repo),
                "sandbox": "read-only",
                "approval-policy": "never",
                "developer-instructions": "Answer in one line.",
                "config": {"model_reasoning_effort": "low"},
            },
        )
        thread_id = seen["codex"].structured_content["threadId"]
        # The deprecated spelling Codex still accepts.
        seen["reply"] = await client.call_tool(
            "codex-reply", {"conversationId": thread_id, "prompt": "and then?"}
        )

    _serve(model_server, tmp_path, session)
    assert seen["codex"].structured_content["content"] == "first answer"
    assert seen["reply"].structured_content["content"] == "second answer"
    assert (
        seen["reply"].structured_content["threadId"] == seen["codex"].structured_content["threadId"]
    )
    assert "hello" in " ".join(user_texts(model_server.bodies[-1]))
    # Codex's `developer-instructions`: a developer message after the base instructions, on
    # the thread's later turns too.
    for body in model_server.bodies:
        assert body["input"][1]["role"] == "developer"
        assert body["input"][1]["content"][0]["text"] == "Answer in one line."


def test_bad_arguments_are_tool_errors_and_the_server_keeps_serving(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    results: dict[str, CallToolResult] = {}

    async def session(client: Client) -> None:
        results["sandbox"] = await client.call_tool("run", {"prompt": "x", "sandbox": "bogus"})
        results["cwd"] = await client.call_tool("run", {"prompt": "x", "cwd": "missing"})
        results["outside"] = await client.call_tool("run", {"prompt": "x", "cwd": str(tmp_path)})
        results["escape"] = await client.call_tool("run", {"prompt": "x", "cwd": "../"})
        results["keys"] = await client.call_tool(
            "run",
            {
                "prompt": "x",
                "config": {
                    "mcp_servers.evil.command": "sh",
                    "notify": ["sh"],
                    "model_reasoning_effort": "low",
                },
            },
        )
        results["config"] = await client.call_tool(
            "run", {"prompt": "x", "cwd": str(repo), "profile": "no-such-profile"}
        )
        results["empty"] = await client.call_tool("run", {"prompt": ""})
        results["approval"] = await client.call_tool(
            "codex", {"prompt": "x", "approval-policy": "on-request"}
        )
        results["instructions"] = await client.call_tool(
            "codex", {"prompt": "x", "base-instructions": "be brief"}
        )
        results["no-id"] = await client.call_tool("codex-reply", {"prompt": "x"})
        results["thread"] = await client.call_tool(
            "reply", {"threadId": "no-such-thread", "prompt": "hello"}
        )
        results["ceiling"] = await client.call_tool(
            "run", {"prompt": "x", "cwd": str(repo), "sandbox": "danger-full-access"}
        )
        # Still serving after all of that.
        assert len((await client.list_tools()).tools) == 5

    _serve(model_server, tmp_path, session, "-s", "workspace-write", "-C", str(repo))

    for name, result in results.items():
        assert result.is_error, name
        assert "internal error" not in _text(result), (name, _text(result))
    assert "sandbox" in _text(results["sandbox"])
    assert "missing" in _text(results["cwd"]) and "no such directory" in _text(results["cwd"])
    for name in ("outside", "escape"):
        assert "outside" in _text(results[name]) and str(repo) in _text(results[name])
    # Under a sandbox ceiling, keys that run commands outside the sandbox are the operator's.
    refused = _text(results["keys"])
    assert "mcp_servers.evil.command, notify cannot be set by a caller" in refused
    assert "no-such-profile" in _text(results["config"])
    assert "prompt" in _text(results["empty"])
    assert "no-such-thread" in _text(results["thread"])
    assert "looser than this server allows" in _text(results["ceiling"])
    assert "never asks for approval" in _text(results["approval"])
    assert "`base-instructions` is not supported" in _text(results["instructions"])
    assert "either threadId or conversationId" in _text(results["no-id"])
    assert not model_server.requests, "no run should have reached the model"


def test_under_a_ceiling_a_caller_cannot_reach_past_it_through_profiles_hooks_or_threads(
    model_server: ModelServer, repo: Path, tmp_path: Path, oi_home: Path
) -> None:
    """The operator's profile that opens the network, the switch for the operator's hooks
    and a thread made elsewhere with a wider sandbox are all refused under `-s`; the
    server's own threads still continue."""
    (oi_home / "config.toml").write_text(
        "[profiles.wide]\nsandbox_workspace_write.network_access = true\n"
    )
    model_server.enqueue(reply("made elsewhere"), reply("mine"), reply("mine again"))
    elsewhere = run_cli([*exec_args(model_server), "--add-dir", str(tmp_path), "start"], cwd=repo)
    assert elsewhere.returncode == 0, elsewhere.stderr
    foreign = elsewhere.events[0]["thread_id"]
    results: dict[str, CallToolResult] = {}

    async def session(client: Client) -> None:
        results["profile"] = await client.call_tool("run", {"prompt": "x", "profile": "wide"})
        results["hooks"] = await client.call_tool(
            "run", {"prompt": "x", "config": {"features": {"hooks": False}}}
        )
        results["codex_hooks"] = await client.call_tool(
            "codex", {"prompt": "x", "config": {"features.codex_hooks": False}}
        )
        for tool in ("reply", "codex-reply"):
            results[tool] = await client.call_tool(tool, {"threadId": foreign, "prompt": "x"})
        mine = await client.call_tool(
            "run", {"prompt": "x", "config": {"features": {"skills": False}}}
        )
        results["mine"] = mine
        thread_id = mine.structured_content["threadId"]
        results["again"] = await client.call_tool(
            "reply", {"threadId": thread_id, "prompt": "again"}
        )

    _serve(model_server, tmp_path, session, "-s", "workspace-write", "-C", str(repo))

    profile = _text(results["profile"])
    assert results["profile"].is_error and "profile 'wide' cannot be chosen" in profile
    assert "-s workspace-write" in profile
    assert "features.hooks cannot be set by a caller" in _text(results["hooks"])
    assert "features.codex_hooks cannot be set" in _text(results["codex_hooks"])
    for tool in ("reply", "codex-reply"):
        assert results[tool].is_error, tool
        assert f"thread {foreign!r} was not started by this server" in _text(results[tool])
    # Only the two calls that were let through reached the model (after the CLI's one).
    assert not results["mine"].is_error, _text(results["mine"])
    assert _text(results["mine"]) == "mine"
    assert _text(results["again"]) == "mine again", _text(results["again"])
    assert len(model_server.requests) == 3


def test_a_failed_run_is_an_error_result_with_its_exit_code(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    model_server.enqueue(reply(tool_calls=[call("exec_command", {"cmd": "pwd"})]))
    model_server.enqueue(reply(tool_calls=[call("exec_command", {"cmd": "pwd"})]))
    seen: dict[str, CallToolResult] = {}

    async def session(client: Client) -> None:
        seen["run"] = await client.call_tool(
            "run",
            # No cwd: the run works in the server's -C directory.
            {"prompt": "loop", "sandbox": "danger-full-access", "max_turns": 1},
        )

    _serve(model_server, tmp_path, session, "-C", str(repo))
    result = seen["run"]
    assert result.is_error, result
    assert result.structured_content["exitCode"] == 4, result
    assert result.structured_content["reason"]
    assert "exit code 4" in _text(result)
    assert str(repo) in json.dumps(model_server.bodies[-1])  # `pwd` printed the repo


def _initialize() -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }


def _call_run(request_id: int, repo: Path) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {
            "name": "run",
            "arguments": {"prompt": "go", "cwd": str(repo), "sandbox": "danger-full-access"},
        },
    }


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purpose; its parent reaps it.
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(") ")[-1].split()[0] != "Z"


def _wait_for(condition: Callable[[], bool], what: str, limit_s: float = 60) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting: {what}"
        time.sleep(0.1)


def test_nothing_but_protocol_messages_on_stdout(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    """Raw JSON-RPC over the pipe: every stdout line is a protocol message, even while the
    run's commands print."""
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": "echo leak-to-stdout; echo leak >&2"})]),
        reply("done"),
    )
    requests = [
        _initialize(),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        _call_run(2, repo),
    ]
    lines: list[str] = []
    with (
        (tmp_path / "server.stderr").open("w") as stderr,
        subprocess.Popen(
            [sys.executable, *_server_args(model_server)],
            cwd=tmp_path,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        ) as proc,
    ):
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(requests[0]) + "\n")
            proc.stdin.flush()
            lines.append(proc.stdout.readline())
            for request in requests[1:]:
                proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
            while True:
                line = proc.stdout.readline()
                assert line, "the server closed stdout before answering"
                lines.append(line)
                if json.loads(line).get("id") == 2:
                    break
            proc.stdin.close()
            assert proc.wait(timeout=30) == 0  # stdin closed: the server ends cleanly
        finally:
            proc.kill()
    messages = [json.loads(line) for line in lines]  # fails on any stray output
    assert all(message["jsonrpc"] == "2.0" for message in messages)
    answer = messages[-1]["result"]
    assert answer["structuredContent"]["content"] == "done"
    assert "leak-to-stdout" not in "".join(lines)
    git(repo, "status")  # the repo is intact


def test_a_cancelled_call_and_a_closed_connection_stop_the_runs_commands(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    pidfiles = [tmp_path / "first.pid", tmp_path / "second.pid"]
    for pidfile in pidfiles:
        model_server.enqueue(
            reply(
                tool_calls=[call("exec_command", {"cmd": f"echo $$ > {pidfile}; exec sleep 300"})]
            )
        )
    with (
        (tmp_path / "server.stderr").open("w") as stderr,
        subprocess.Popen(
            [sys.executable, *_server_args(model_server)],
            cwd=tmp_path,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        ) as proc,
    ):
        assert proc.stdin is not None and proc.stdout is not None

        def send(message: dict[str, Any]) -> None:
            assert proc.stdin is not None
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()

        try:
            send(_initialize())
            proc.stdout.readline()
            send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            # The client gives up on a call: the run and its command end, the server serves on.
            send(_call_run(2, repo))
            _wait_for(lambda: pidfiles[0].exists() and pidfiles[0].read_text().strip() != "", "1st")
            first = int(pidfiles[0].read_text())
            send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": 2, "reason": "changed my mind"},
                }
            )
            _wait_for(lambda: not _alive(first), "the cancelled run's command to end")
            # The client goes away mid-run: the server ends, and so does the run.
            send(_call_run(3, repo))
            _wait_for(lambda: pidfiles[1].exists() and pidfiles[1].read_text().strip() != "", "2nd")
            second = int(pidfiles[1].read_text())
            proc.stdin.close()
            assert proc.wait(timeout=60) == 0
            _wait_for(lambda: not _alive(second), "the run's command to end with the server")
        finally:
            proc.kill()


def test_a_config_error_stops_the_server_at_start_with_the_config_exit_code(
    tmp_path: Path,
) -> None:
    for args in (["-p", "no-such-profile"], ["-c", 'model_context_window="many"']):
        result = run_cli(["mcp-server", *args], cwd=tmp_path)
        assert result.returncode == 3, result.stderr
        assert result.stdout == ""  # nothing on the protocol channel
        assert "no-such-profile" in result.stderr or "model_context_window" in result.stderr


def test_two_calls_run_at_the_same_time(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    """Each run's command waits until the other run's has started: served one at a time,
    the first command would never get past its barrier."""
    gate = tmp_path / "gate"
    gate.mkdir()
    # The output says "met-2" only once the loop ended (the command's text has no "met-2").
    barrier = (
        f"touch {gate}/$$; while [ $(ls {gate} | wc -l) -lt 2 ]; do sleep 0.1; done; "
        "echo met-$((1 + 1))"
    )
    for _ in range(2):
        model_server.enqueue(reply(tool_calls=[call("exec_command", {"cmd": barrier})]))
    model_server.enqueue(reply("done"), reply("done"))
    seen: list[CallToolResult] = []

    async def session(client: Client) -> None:
        async def one() -> None:
            arguments = {
                "prompt": "wait for the other",
                "cwd": str(repo),
                "sandbox": "danger-full-access",
                "timeout": 60,
            }
            seen.append(await client.call_tool("run", arguments))

        async with anyio.create_task_group() as group:
            group.start_soon(one)
            group.start_soon(one)

    _serve(model_server, tmp_path, session)
    assert [result.structured_content["exitCode"] for result in seen] == [0, 0]
    # Both barriers opened: each run's second request carries its command's output.
    assert sum("met-2" in json.dumps(body) for body in model_server.bodies) == 2
    assert len({result.structured_content["threadId"] for result in seen}) == 2


def test_an_oiexec_run_delegates_to_another_through_mcp_server(
    model_server: ModelServer, repo: Path
) -> None:
    """The whole loop as a user sets it up: `interpreter mcp add` registers
    `interpreter mcp-server`, and an `exec` run calls its `run` tool."""
    model_server.enqueue(
        reply(tool_calls=[call("mcp__oiexec__run", {"prompt": "write hello.txt"}, call_id="d")]),
        reply(tool_calls=[call("exec_command", {"cmd": "echo hi > hello.txt"})]),  # inner run
        reply("inner: wrote hello.txt"),
        reply("outer: delegated"),
    )
    provider = model_server.config_args()
    server = [sys.executable, "-m", "oiexec", "mcp-server", "-s", "danger-full-access"]
    added = run_cli(["mcp", "add", "oiexec", "--", *server, "-C", str(repo), *provider], cwd=repo)
    assert added.returncode == 0, added.stderr

    outer = run_cli([*exec_args(model_server), "delegate the task"], cwd=repo, timeout=120)
    assert outer.returncode == 0, outer.stderr
    (item,) = outer.items("mcp_tool_call")
    assert (item["server"], item["tool"], item["status"]) == ("oiexec", "run", "completed")
    inner = item["result"]["structured_content"]
    assert (inner["content"], inner["exitCode"]) == ("inner: wrote hello.txt", 0)
    assert "+hi" in inner["diff"]
    assert (repo / "hello.txt").read_text() == "hi\n"


def test_review_returns_findings_and_the_gate_verdict(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    (repo / "calc.py").write_text("def add(a, b):\n    return a * b\n")
    finding = {
        "title": "add() multiplies",
        "body": "`add` returns `a * b`.",
        "confidence_score": 0.9,
        "priority": 0,
        "code_location": {
            "absolute_file_path": str(repo / "calc.py"),
            "line_range": {"start": 2, "end": 2},
        },
    }
    answer = {
        "findings": [finding],
        "overall_correctness": "patch is incorrect",
        "overall_explanation": "The change breaks add().",
        "overall_confidence_score": 0.8,
    }
    model_server.enqueue(reply(json.dumps(answer)))
    seen: dict[str, CallToolResult] = {}

    async def session(client: Client) -> None:
        seen["review"] = await client.call_tool("review", {"uncommitted": True})
        seen["no target"] = await client.call_tool("review", {})

    _serve(model_server, tmp_path, session, "-C", str(repo))
    review = seen["review"]
    assert not review.is_error, _text(review)  # a blocking finding is an answer, not a failure
    outcome = review.structured_content
    assert (outcome["verdict"], outcome["exitCode"]) == ("blocked", 7)
    assert [f["title"] for f in outcome["findings"]] == ["add() multiplies"]
    assert outcome["blocking"][0]["relative_path"] == "calc.py"
    assert "add() multiplies" in _text(review)
    assert seen["no target"].is_error
    assert "internal error" not in _text(seen["no target"])
