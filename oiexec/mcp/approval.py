"""Whether a call to an MCP tool needs approval, decided as Codex decides it.

Exec's approval policy is always `never`, so a call that needs approval is refused with
Codex's message, never asked about. Codex's rule (codex-rs/core mcp_tool_call.rs):

- full access (approval `never` with the `danger-full-access` sandbox, which the bypass flag
  also gives) runs every call;
- the mode is the tool's `tools.<name>.approval_mode`, else the server's
  `default_tools_approval_mode`, else `auto`;
- `approve` runs the call; `prompt` always needs approval;
- `auto` runs a tool the server sent no annotations for; for an annotated one, a hint left
  out takes MCP's default (not read-only, destructive, open world), so the call needs
  approval unless the tool says it is read-only, or says it is neither destructive nor
  open-world.
"""

from __future__ import annotations

from typing import Any

from oiexec.config.mcp import McpServerConfig, ToolApprovalMode

__all__ = ["APPROVAL_REFUSED", "approval_mode", "needs_approval"]

APPROVAL_REFUSED = "MCP tool call requires approval, but approval policy is never"


def approval_mode(config: McpServerConfig, tool: str) -> ToolApprovalMode:
    per_tool = config.tools.get(tool)
    if per_tool is not None and per_tool.approval_mode is not None:
        return per_tool.approval_mode
    return config.default_tools_approval_mode or "auto"


def _risky(annotations: dict[str, Any]) -> bool:
    destructive = annotations.get("destructiveHint")
    if destructive is True:
        return True
    if annotations.get("readOnlyHint") is True:
        return False
    return destructive is not False or annotations.get("openWorldHint") is not False


def needs_approval(
    mode: ToolApprovalMode, annotations: dict[str, Any] | None, *, full_access: bool
) -> bool:
    if full_access or mode == "approve":
        return False
    if mode == "prompt":
        return True
    return annotations is not None and _risky(annotations)
