"""A streamable-HTTP server on loopback: bearer token from `bearer_token_env_var`, headers
from `http_headers` and `env_http_headers`; a missing variable or a refused token is named."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import exec_args, run_cli
from tests.mcp.conftest import REPO_ROOT, toml
from tests.support.model_server import ModelServer, call, reply


@pytest.fixture(scope="module")
def web_url() -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.mcp_servers.web",
            "--port",
            str(port),
            "--token",
            "tok-123",
            "--header",
            "X-Team=blue",
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the web MCP server did not come up"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait()


def _flags(url: str, name: str = "web", **keys: object) -> list[str]:
    values = {"url": url, "bearer_token_env_var": "WEB_TOKEN", **keys}
    return [
        arg
        for key, value in values.items()
        for arg in ("-c", f"mcp_servers.{name}.{key}={toml(value)}")
    ]


def test_bearer_and_headers_reach_the_server(
    model_server: ModelServer, repo: Path, web_url: str
) -> None:
    model_server.enqueue(
        reply(tool_calls=[call("mcp__web__whoami", {"text": "hi"}, call_id="w")]), reply("done")
    )
    flags = _flags(web_url, env_http_headers={"X-Team": "TEAM_NAME"})
    env = {"WEB_TOKEN": "tok-123", "TEAM_NAME": "blue"}
    result = run_cli([*exec_args(model_server), *flags, "go"], cwd=repo, env=env)
    assert result.returncode == 0, result.stderr
    item = result.items("mcp_tool_call")[0]
    assert (item["server"], item["tool"], item["status"]) == ("web", "whoami", "completed")
    assert item["result"]["content"] == [{"type": "text", "text": "web says: hi"}]


def test_required_http_servers_that_refuse_fail_the_run(
    model_server: ModelServer, repo: Path, web_url: str
) -> None:
    flags = [
        *_flags(web_url, required=True, http_headers={"X-Team": "blue"}),
        *_flags(web_url, name="web2", bearer_token_env_var="WRONG_TOKEN", required=True),
    ]
    result = run_cli([*exec_args(model_server), *flags, "go"], cwd=repo, env={"WRONG_TOKEN": "x"})
    assert result.returncode == 3, result.stderr
    message = result.events[-1]["error"]["message"]
    assert "`web`: environment variable `WEB_TOKEN` (bearer_token_env_var) is not set" in message
    assert "`web2`: the server answered HTTP 401 Unauthorized" in message
