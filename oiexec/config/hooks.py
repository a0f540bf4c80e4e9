"""`[hooks]`: commands run at fixed points of a run, in Codex's shape (event -> matcher
groups -> command handlers), as in `hooks.json` and inline `[hooks]` tables."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["HookCommand", "HookGroup", "HooksConfig"]


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class HookCommand(_Table):
    type: Literal["command"] = "command"
    command: str
    #: Seconds the command may run before it is killed (and reported as failed).
    timeout: float = Field(default=600.0, gt=0)
    #: Shown while the hook runs (the transcript names it).
    statusMessage: str | None = None


class HookGroup(_Table):
    #: Which tools (a regular expression over the tool name) or sources the group applies to;
    #: empty or absent matches all.
    matcher: str | None = None
    hooks: list[HookCommand] = Field(default_factory=list)


class HooksConfig(_Table):
    # Event names are Codex's keys.
    SessionStart: list[HookGroup] = Field(default_factory=list)
    PreToolUse: list[HookGroup] = Field(default_factory=list)
    PostToolUse: list[HookGroup] = Field(default_factory=list)
    UserPromptSubmit: list[HookGroup] = Field(default_factory=list)
    Stop: list[HookGroup] = Field(default_factory=list)
