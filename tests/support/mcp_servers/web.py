"""A streamable-HTTP MCP server for the tests, on 127.0.0.1, behind a bearer token.

    python -m tests.support.mcp_servers.web --port N --token T [--header NAME=VALUE]

Answers 401 without `Authorization: Bearer T` (and without each `--header`); tool `whoami`
echoes the text back with the server's name.
"""

from __future__ import annotations

import argparse
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer

server = MCPServer("web")


@server.tool(description="Echo the text back, signed by the web server.", structured_output=False)
def whoami(text: str) -> str:
    return f"web says: {text}"


def guarded(app: Any, required: dict[str, str]) -> Any:
    """The app, refusing any request that lacks one of the `required` headers."""

    async def asgi(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
            if any(headers.get(name.lower()) != value for name, value in required.items()):
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await app(scope, receive, send)

    return asgi


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--header", action="append", default=[])
    args = parser.parse_args()
    required = {"Authorization": f"Bearer {args.token}"}
    required.update(item.split("=", 1) for item in args.header)
    app = guarded(server.streamable_http_app(), required)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", lifespan="on")


if __name__ == "__main__":
    main()
