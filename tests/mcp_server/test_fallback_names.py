"""An `mcp-server` caller's `project_doc_fallback_filenames` takes plain file names only:
the runner reads them itself, outside the sandbox, so an absolute name would hand the
caller any file of the server's (its own environment, with the operator's key)."""

from __future__ import annotations

from pathlib import Path

from mcp import Client
from mcp_types import CallToolResult

from tests.mcp_server.test_mcp_server import _serve, _text
from tests.support.model_server import ModelServer


def test_a_fallback_name_that_is_a_path_is_a_tool_error(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    results: dict[str, CallToolResult] = {}
    bad = {"project_doc_fallback_filenames": ["/proc/self/environ"]}

    async def session(client: Client) -> None:
        results["run"] = await client.call_tool("run", {"prompt": "x", "config": bad})
        results["codex"] = await client.call_tool(
            "codex", {"prompt": "x", "config": {"project_doc_fallback_filenames": ["../x"]}}
        )

    # Without a sandbox ceiling too: the check is not one of the ceiling's.
    _serve(model_server, tmp_path, session, "-C", str(repo))
    for name, result in results.items():
        assert result.is_error, name
        text = _text(result)
        assert "config.project_doc_fallback_filenames" in text, text
        assert "not a plain file name" in text
    assert not model_server.requests, "no run should have reached the model"
