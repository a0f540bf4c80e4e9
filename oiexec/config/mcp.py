"""`[mcp_servers.<id>]`: the MCP servers a run starts, with Codex's keys.

A server is either a local process spoken to over stdio (`command`, `args`, `env`, `cwd`) or
a streamable-HTTP endpoint (`url`, `bearer_token_env_var`, `http_headers`); which one is
decided by which of `command` and `url` is set (exactly one must be).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from oiexec.config.headers import EnvHeaderMap, HeaderMap
from oiexec.config.number_keys import MillisecondsKey, SecondsKey

__all__ = ["McpServerConfig", "McpToolConfig", "ToolApprovalMode"]

#: How a tool call is approved: `auto` runs it, `prompt` asks (so under exec's forced
#: `never` it fails), `approve` is an explicit yes.
ToolApprovalMode = Literal["auto", "prompt", "approve"]


class McpToolConfig(BaseModel):
    """`[mcp_servers.<id>.tools.<tool>]`: settings of one tool."""

    model_config = ConfigDict(extra="forbid", strict=True)

    approval_mode: ToolApprovalMode | None = None


class McpServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    # stdio
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    #: Names of variables passed through from oiexec's own environment.
    env_vars: list[str] = Field(default_factory=list)
    cwd: str | None = None
    # streamable HTTP
    url: str | None = None
    bearer_token_env_var: str | None = None
    http_headers: HeaderMap = Field(default_factory=dict)
    env_http_headers: EnvHeaderMap = Field(default_factory=dict)

    enabled: bool = True
    #: A required server that does not start fails the run before the turn.
    required: bool = False
    enabled_tools: list[str] | None = None
    disabled_tools: list[str] = Field(default_factory=list)
    startup_timeout_sec: SecondsKey = 10.0
    #: Codex's older spelling of the startup timeout.
    startup_timeout_ms: MillisecondsKey | None = None
    tool_timeout_sec: SecondsKey = 60.0
    default_tools_approval_mode: ToolApprovalMode | None = None
    tools: dict[str, McpToolConfig] = Field(default_factory=dict)

    @field_validator("env_vars", mode="before")
    @classmethod
    def _env_var_names(cls, value: object) -> object:
        """Codex also takes `{ name = "X", source = "local" }`; a `remote` source needs a
        remote executor, which exec does not have."""
        if not isinstance(value, list):
            return value
        names: list[object] = []
        for entry in value:
            if isinstance(entry, dict) and set(entry) <= {"name", "source"} and "name" in entry:
                if entry.get("source") not in (None, "local"):
                    raise ValueError(
                        f"env_vars entry `{entry['name']}` uses source "
                        f"`{entry['source']}`; only local variables can be passed to a server"
                    )
                names.append(entry["name"])
            else:
                names.append(entry)
        return names

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError(
                "set exactly one of `command` (a stdio server) and `url` (a streamable-HTTP server)"
            )
        return self

    @property
    def startup_timeout(self) -> float:
        if self.startup_timeout_ms is not None:
            return self.startup_timeout_ms / 1000
        return self.startup_timeout_sec
