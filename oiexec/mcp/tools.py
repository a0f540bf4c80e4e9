"""A server's tool as a `Tool` the harness offers: named `mcp__<server>__<tool>`, reported as
an `mcp_tool_call` item, its result given back to the model as text and images.

What the model reads follows Codex (codex-rs/protocol's CallToolResult conversion): the
structured content as JSON when the server sent any, else the content blocks, text as text,
images as images, anything else (resource links, embedded resources, audio) as its JSON; a
call that produced no result (timeout, server gone, refused) reads as its error message.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from oiexec.config.mcp import ToolApprovalMode
from oiexec.core.context import ToolContext
from oiexec.core.events import McpToolCallError, McpToolCallItem, McpToolCallResult
from oiexec.core.tokens import truncate_middle
from oiexec.core.types import ImageInput, ToolCall, ToolOutput, ToolSpec
from oiexec.mcp.approval import APPROVAL_REFUSED, needs_approval
from oiexec.mcp.manager import McpCallError, McpManager, ServerTool

__all__ = ["McpTool", "model_output"]


@dataclass(frozen=True)
class McpTool:
    manager: McpManager
    listed: ServerTool
    name: str
    timeout: float
    approval: ToolApprovalMode
    #: Approval `never` with the `danger-full-access` sandbox (or the bypass flag): Codex
    #: runs every MCP call then.
    full_access: bool
    #: Most tokens of a result the model reads (`tool_output_token_limit`); the item keeps
    #: the whole result, as Codex's does.
    output_tokens: int = 10_000

    @property
    def server(self) -> str:
        return self.listed.server

    @property
    def tool(self) -> str:
        return self.listed.name

    @property
    def annotations(self) -> dict[str, Any] | None:
        return self.listed.annotations

    @property
    def spec(self) -> ToolSpec:
        """The server's own description and schema; each harness offers them in its
        product's shape (harness/mcp_tools.py), an object schema with `properties` included."""
        return ToolSpec(
            name=self.name,
            description=self.listed.description,
            parameters=self.listed.input_schema,
        )

    def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutput:
        def output(text: str, *, error: bool, images: tuple[ImageInput, ...] = ()) -> ToolOutput:
            return ToolOutput(
                call_id=call.call_id,
                output=text,
                call_type=call.call_type,
                is_error=error,
                images=images,
            )

        # Unparseable arguments never reach the server and make no item (as in Codex).
        try:
            arguments = json.loads(call.arguments) if call.arguments.strip() else None
        except json.JSONDecodeError as exc:
            return output(f"err: {exc}", error=True)
        item = McpToolCallItem(
            id=ctx.items.next_id(), server=self.server, tool=self.tool, arguments=arguments
        )
        ctx.items.started(item)

        if needs_approval(self.approval, self.annotations, full_access=self.full_access):
            return self._failed(ctx, item, APPROVAL_REFUSED, output)
        if arguments is not None and not isinstance(arguments, dict):
            return self._failed(
                ctx, item, "tool call error: arguments must be a JSON object", output
            )
        try:
            result = self.manager.call(self.server, self.tool, arguments, self.timeout)
        except McpCallError as exc:
            # Codex's wording: its error with the call as context, then the cause.
            message = (
                f"tool call error: tool call failed for `{self.server}/{self.tool}`\n\n"
                f"Caused by:\n    {exc}"
            )
            return self._failed(ctx, item, message, output)

        content = [
            block.model_dump(by_alias=True, exclude_none=True, mode="json")
            for block in result.content
        ]
        structured = result.structured_content
        is_error = bool(result.is_error)
        done = item.model_copy(
            update={
                "result": McpToolCallResult(content=content, structured_content=structured),
                "status": "failed" if is_error else "completed",
            }
        )
        ctx.items.completed(done)
        text, images = model_output(content, structured, label=f"{self.server}.{self.tool}")
        return output(truncate_middle(text, self.output_tokens), error=is_error, images=images)

    @staticmethod
    def _failed(
        ctx: ToolContext,
        item: McpToolCallItem,
        message: str,
        output: Callable[..., ToolOutput],
    ) -> ToolOutput:
        """Completes the item as failed with `message`, which is also what the model reads."""
        ctx.items.completed(
            item.model_copy(update={"error": McpToolCallError(message=message), "status": "failed"})
        )
        return output(message, error=True)


def model_output(
    content: list[dict[str, Any]], structured: Any, *, label: str
) -> tuple[str, tuple[ImageInput, ...]]:
    """The text and images the model reads for a result."""
    if structured is not None:
        return json.dumps(structured, ensure_ascii=False), ()
    texts: list[str] = []
    images: list[ImageInput] = []
    for block in content:
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text", "")))
        elif kind == "image" and isinstance(block.get("data"), str):
            data = block["data"]
            url = (
                data
                if data.startswith("data:")
                else (f"data:{block.get('mimeType') or 'application/octet-stream'};base64,{data}")
            )
            images.append(ImageInput(path=f"{label} image {len(images) + 1}", data_url=url))
        else:
            texts.append(json.dumps(block, ensure_ascii=False))
    return "\n".join(texts), tuple(images)
