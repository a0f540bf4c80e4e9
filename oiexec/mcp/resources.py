"""The resource tools Codex offers beside MCP servers' own tools: `list_mcp_resources`,
`list_mcp_resource_templates` and `read_mcp_resource`.

Each call is reported as an `mcp_tool_call` item, as Codex reports it: the server named (or
`codex` when a listing covers every server), the tool's own name, and the JSON the model
reads as the result's one text block.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

from oiexec.core.context import ToolContext
from oiexec.core.events import McpToolCallError, McpToolCallItem, McpToolCallResult
from oiexec.core.tokens import truncate_middle
from oiexec.core.types import ToolCall, ToolOutput, ToolSpec
from oiexec.mcp.manager import McpCallError, McpManager

__all__ = ["resource_tools"]

#: Listing and reading are quick requests; a server that takes longer is treated as stuck.
_REQUEST_TIMEOUT_S = 60.0

_SERVER = {"type": "string", "description": "The MCP server's name; every server when omitted."}
_CURSOR = {"type": "string", "description": "The cursor a previous page returned (needs `server`)."}
_LISTING = {
    "type": "object",
    "properties": {"server": _SERVER, "cursor": _CURSOR},
    "additionalProperties": False,
}

_SPECS = {
    "list_mcp_resources": ToolSpec(
        name="list_mcp_resources",
        description=(
            "List the resources (files, records, documents) the configured MCP servers make "
            "available. Read one with read_mcp_resource."
        ),
        parameters=_LISTING,
    ),
    "list_mcp_resource_templates": ToolSpec(
        name="list_mcp_resource_templates",
        description=(
            "List the parameterised resource URIs (templates) the configured MCP servers accept."
        ),
        parameters=_LISTING,
    ),
    "read_mcp_resource": ToolSpec(
        name="read_mcp_resource",
        description="Read one resource of an MCP server by its URI.",
        parameters={
            "type": "object",
            "properties": {
                "server": {"type": "string", "description": "The MCP server's name."},
                "uri": {"type": "string", "description": "The resource's URI."},
            },
            "required": ["server", "uri"],
            "additionalProperties": False,
        },
    ),
}


def resource_tools(
    manager: McpManager, servers: Sequence[str], output_tokens: int = 10_000
) -> list[McpResourceTool]:
    return [McpResourceTool(manager, name, tuple(servers), output_tokens) for name in _SPECS]


def _dump(value: Any) -> Any:
    return value.model_dump(by_alias=True, exclude_none=True, mode="json")


@dataclass(frozen=True)
class McpResourceTool:
    manager: McpManager
    name: str
    servers: tuple[str, ...]
    #: Most tokens the model reads (`tool_output_token_limit`): a resource can be any size.
    output_tokens: int = 10_000

    @property
    def spec(self) -> ToolSpec:
        return _SPECS[self.name]

    def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutput:
        try:
            raw = json.loads(call.arguments) if call.arguments.strip() else {}
        except json.JSONDecodeError as exc:
            return ToolOutput(call_id=call.call_id, output=f"err: {exc}", is_error=True)
        args = raw if isinstance(raw, dict) else {}
        server = str(args.get("server") or "").strip() or None
        item = McpToolCallItem(
            id=ctx.items.next_id(), server=server or "codex", tool=self.name, arguments=raw
        )
        ctx.items.started(item)
        try:
            payload = self._payload(server, args)
        except McpCallError as exc:
            message = str(exc)
            ctx.items.completed(
                item.model_copy(
                    update={"error": McpToolCallError(message=message), "status": "failed"}
                )
            )
            return ToolOutput(call_id=call.call_id, output=message, is_error=True)
        text = json.dumps(payload, ensure_ascii=False)
        result = McpToolCallResult(content=[{"type": "text", "text": text}])
        ctx.items.completed(item.model_copy(update={"result": result, "status": "completed"}))
        return ToolOutput(call_id=call.call_id, output=truncate_middle(text, self.output_tokens))

    def _payload(self, server: str | None, args: dict[str, Any]) -> dict[str, Any]:
        cursor = str(args.get("cursor") or "").strip() or None
        if server is not None and server not in self.servers:
            raise McpCallError(f"unknown MCP server `{server}`; servers: {', '.join(self.servers)}")
        if self.name == "read_mcp_resource":
            uri = str(args.get("uri") or "").strip()
            if server is None or not uri:
                raise McpCallError("read_mcp_resource needs both `server` and `uri`")
            result = self._request(server, lambda s: s.read_resource(uri), "resources/read")
            return {"server": server, "uri": uri, **_dump(result)}
        templates = self.name == "list_mcp_resource_templates"
        key = "resourceTemplates" if templates else "resources"
        method = "resources/templates/list" if templates else "resources/list"
        if server is None and cursor is not None:
            raise McpCallError("cursor can only be used when a server is specified")
        entries: list[dict[str, Any]] = []
        next_cursor = None
        for name in [server] if server is not None else sorted(self.servers):
            assert name is not None
            try:
                result = self._request(name, _lister(templates, cursor), method)
            except McpCallError:
                if server is not None:
                    raise
                continue  # a server without resources does not spoil the listing of the others
            listed = result.resource_templates if templates else result.resources
            entries.extend({"server": name, **_dump(entry)} for entry in listed)
            next_cursor = result.next_cursor if server is not None else None
        payload: dict[str, Any] = {key: entries}
        if server is not None:
            payload = {"server": server, **payload}
        if next_cursor:
            payload["nextCursor"] = next_cursor
        return payload

    def _request(
        self, server: str, make: Callable[[Any], Coroutine[Any, Any, Any]], method: str
    ) -> Any:
        try:
            return self.manager.run(server, make, _REQUEST_TIMEOUT_S, method=method)
        except McpCallError as exc:
            raise McpCallError(f"{method} failed: {exc}") from None


def _lister(templates: bool, cursor: str | None) -> Callable[[Any], Coroutine[Any, Any, Any]]:
    import mcp_types

    params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
    if templates:
        return lambda session: session.list_resource_templates(params=params)
    return lambda session: session.list_resources(params=params)
