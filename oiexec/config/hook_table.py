"""`[hooks]`: commands run at fixed points of a run, in Codex's shape (event -> matcher
groups -> handlers), as in `hooks.json` and inline `[hooks]` tables.

Every event name and handler key Codex's config knows is accepted, so a Codex hooks file
loads unchanged. exec runs `command` handlers at SessionStart, UserPromptSubmit, PreToolUse,
PostToolUse and Stop; the other events never occur in an exec run (PermissionRequest: exec
never asks; compaction and subagent events), and `prompt`/`agent` handlers are not run, as
Codex does not run them either. `oiexec.extensions.hooks` says so once per run.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

from oiexec.config.number_keys import SecondsKey

__all__ = ["RUN_EVENTS", "HookCommand", "HookGroup", "HooksConfig"]

#: The events an exec run fires.
RUN_EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")


class _Table(BaseModel):
    model_config = ConfigDict(
        extra="forbid", strict=True, populate_by_name=True, serialize_by_alias=True
    )


class HookCommand(_Table):
    type: Literal["command", "prompt", "agent"] = "command"
    #: The shell command (`/bin/sh -c`); required for `type = "command"`.
    command: str | None = None
    #: Seconds the command may run before it is killed (and reported as failed).
    timeout: SecondsKey = Field(
        default=600.0, validation_alias=AliasChoices("timeout", "timeoutSec")
    )
    #: Codex runs an async hook in the background and ignores its answer; exec waits for
    #: every hook (a run is short-lived), so it only changes when the answer is read: never.
    run_async: bool = Field(default=False, alias="async")
    #: Shown while the hook runs (the transcript names it).
    statusMessage: str | None = None

    @model_validator(mode="after")
    def _command_given(self) -> HookCommand:
        if self.type == "command" and not (self.command or "").strip():
            raise ValueError('a hook with type = "command" needs a non-empty `command`')
        return self


class HookGroup(_Table):
    #: Which tools (a regular expression searched in the tool name) or sources the group
    #: applies to; empty, absent or "*" matches all.
    matcher: str | None = None
    hooks: list[HookCommand] = Field(default_factory=list)


class HooksConfig(_Table):
    # Event names are Codex's keys.
    SessionStart: list[HookGroup] = Field(default_factory=list)
    PreToolUse: list[HookGroup] = Field(default_factory=list)
    PostToolUse: list[HookGroup] = Field(default_factory=list)
    UserPromptSubmit: list[HookGroup] = Field(default_factory=list)
    Stop: list[HookGroup] = Field(default_factory=list)
    # Known to Codex, never fired by an exec run.
    PermissionRequest: list[HookGroup] = Field(default_factory=list)
    PreCompact: list[HookGroup] = Field(default_factory=list)
    PostCompact: list[HookGroup] = Field(default_factory=list)
    SubagentStart: list[HookGroup] = Field(default_factory=list)
    SubagentStop: list[HookGroup] = Field(default_factory=list)
