"""The hook events of a run, with Codex's payloads and its reading of a hook's answer.

SessionStart (source `startup` or `resume`) and UserPromptSubmit may add context for the
model (`hookSpecificOutput.additionalContext`, or plain stdout); UserPromptSubmit may block the
prompt. PreToolUse and PostToolUse run around every tool call (`HookGate`, the loop's
`ToolGate`). Stop runs when the model gives its final answer; `{"decision": "block",
"reason": ...}` sends the reason back and the model continues (the runner bounds how often).

A PreToolUse hook refuses the call when it exits with any status but 0 (its stderr, else
stdout, is the reason: Codex blocks on exit 2 only, oiexec on every non-zero status so that a
broken guard fails closed), when it times out or cannot start, or when it answers with
`permissionDecision: "deny"` / `decision: "block"`. A failing hook at any other event is
reported on stderr and in the run log, and the run goes on.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oiexec.core.types import ToolCall, ToolOutput
from oiexec.extensions.hooks import HookRun, HookRunner

if TYPE_CHECKING:
    from oiexec.core.protocols import Tool

__all__ = ["HookGate", "HookSession"]

#: Tool implementations that run a shell command: hooks see them as Codex's `Bash`.
_SHELL_IMPLS = frozenset({"shell", "exec_command", "execute"})
_PATCH_IMPLS = frozenset({"apply_patch"})
#: Codex's `permission_mode` under exec's forced `approval_policy = "never"`.
_PERMISSION_MODE = "bypassPermissions"


@dataclass
class HookSession:
    """What every payload carries, and the runner of the run's hooks."""

    runner: HookRunner
    session_id: str
    turn_id: str
    cwd: Path
    model: str
    transcript_path: Path | None
    warn: Callable[[str], None]
    #: Tool name -> how hooks see it (filled once the harness's tools are known).
    tools: dict[str, Tool] = field(default_factory=dict)

    def common(self, event: str) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "turn_id": self.turn_id,
            "transcript_path": str(self.transcript_path) if self.transcript_path else None,
            "cwd": str(self.cwd),
            "hook_event_name": event,
            "model": self.model,
            "permission_mode": _PERMISSION_MODE,
        }

    def tool_payload(
        self, event: str, call: ToolCall, name: str, tool_input: Any
    ) -> dict[str, Any]:
        """What PreToolUse and PostToolUse both send, with the tool as `describe` names it."""
        return {
            **self.common(event),
            "tool_name": name,
            "tool_input": tool_input,
            "tool_use_id": call.call_id,
        }

    def report(self, runs: Sequence[HookRun]) -> None:
        """A hook that failed is said once on stderr; the run goes on."""
        for run in runs:
            if run.failure is not None:
                self.warn(f"{run.handler.event} hook `{run.handler.command}` {run.failure}")
            elif run.exit_code not in (0, 2) and run.handler.event != "PreToolUse":
                detail = _first_line(run.message())
                self.warn(
                    f"{run.handler.event} hook `{run.handler.command}` exited with status "
                    f"{run.exit_code}" + (f": {detail}" if detail else "")
                )
            elif run.exit_code == 0:
                # Codex shows a hook's `systemMessage` to the user, never to the model.
                message = _text((run.json_output() or {}).get("systemMessage"))
                if message:
                    self.warn(f"{run.handler.event} hook: {message}")

    # -- session and prompt ------------------------------------------------------------

    def session_start(self, source: str) -> list[str]:
        """Context the SessionStart hooks add for the model."""
        payload = {**self.common("SessionStart"), "source": source}
        runs = self.runner.run("SessionStart", payload, (source,))
        self.report(runs)
        return _contexts(runs)

    def user_prompt_submit(self, prompt: str) -> tuple[str | None, list[str]]:
        """(why the prompt is blocked, or None; context to add for the model)."""
        payload = {**self.common("UserPromptSubmit"), "prompt": prompt}
        runs = self.runner.run("UserPromptSubmit", payload)
        self.report(runs)
        for run in runs:
            reason = _block_reason(run)
            if reason is not None:
                return reason, []
        return None, _contexts(runs)

    def stop(self, last_message: str, active: bool) -> str | None:
        """Why a Stop hook sends the model back (`stop_hook_active`: it did before)."""
        payload = {
            **self.common("Stop"),
            "stop_hook_active": active,
            "last_assistant_message": last_message,
        }
        runs = self.runner.run("Stop", payload)
        self.report(runs)
        for run in runs:
            reason = _block_reason(run)
            if reason is not None:
                return reason
        return None

    # -- tools ---------------------------------------------------------------------------

    def know_tools(self, tools: Sequence[Tool]) -> None:
        self.tools = {tool.spec.name: tool for tool in tools}

    def describe(self, call: ToolCall) -> tuple[str, list[str], Any]:
        """(the tool name hooks see, matcher aliases, `tool_input`) as Codex reports them."""
        tool = self.tools.get(call.name)
        entry = getattr(tool, "entry", None)
        impl = getattr(entry, "impl", "")
        arguments = _arguments(call)
        if impl in _SHELL_IMPLS:
            renames: Mapping[str, str] = getattr(entry, "args", {}) or {}
            command = _command_text(arguments, renames)
            return "Bash", [call.name], {"command": command}
        if impl in _PATCH_IMPLS:
            patch = call.arguments if call.call_type == "custom" else arguments.get("input", "")
            return "apply_patch", [call.name, "Edit", "Write"], {"command": patch}
        return call.name, [], arguments


class HookGate:
    """PreToolUse and PostToolUse around every tool call (the loop's `ToolGate`)."""

    def __init__(self, session: HookSession) -> None:
        self._session = session

    def before(self, call: ToolCall) -> str | None:
        s = self._session
        if not s.runner.has("PreToolUse"):
            return None
        name, aliases, tool_input = s.describe(call)
        payload = s.tool_payload("PreToolUse", call, name, tool_input)
        runs = s.runner.run("PreToolUse", payload, (name, *aliases))
        s.report(runs)
        for run in runs:
            reason = _refusal(run)
            if reason is None:
                continue
            s.warn(f"PreToolUse hook refused `{name}`: {_first_line(reason)}")
            if name == "Bash":
                command = tool_input.get("command", "")
                return f"Command blocked by PreToolUse hook: {reason}. Command: {command}"
            return f"Tool call blocked by PreToolUse hook: {reason}. Tool: {call.name}"
        return None

    def after(self, call: ToolCall, output: ToolOutput) -> ToolOutput:
        s = self._session
        if not s.runner.has("PostToolUse"):
            return output
        name, aliases, tool_input = s.describe(call)
        payload = {
            **s.tool_payload("PostToolUse", call, name, tool_input),
            "tool_response": output.output,
        }
        runs = s.runner.run("PostToolUse", payload, (name, *aliases))
        s.report(runs)
        notes: list[str] = []
        for run in runs:
            reason = _block_reason(run)
            if reason is not None:
                # Codex: the tool already ran; the model is told the hook's objection.
                notes.append(reason)
            notes.extend(_contexts([run]))
        if not notes:
            return output
        text = output.output.rstrip() + "\n\n" + "\n".join(f"[PostToolUse hook] {n}" for n in notes)
        return output.model_copy(update={"output": text})


# -- reading a hook's answer ---------------------------------------------------------------


def _refusal(run: HookRun) -> str | None:
    """Why a PreToolUse hook refuses the call, None when it lets it run."""
    if run.failure is not None:
        return f"the hook `{run.handler.command}` {run.failure}"
    if run.exit_code != 0:
        return (
            run.message() or f"the hook `{run.handler.command}` exited with status {run.exit_code}"
        )
    data = run.json_output()
    if data is None:
        return None
    specific = data.get("hookSpecificOutput")
    if isinstance(specific, dict) and specific.get("permissionDecision") == "deny":
        return _text(specific.get("permissionDecisionReason")) or "denied by a PreToolUse hook"
    if data.get("decision") == "block":
        return _text(data.get("reason")) or "blocked by a PreToolUse hook"
    return None


def _block_reason(run: HookRun) -> str | None:
    """`decision: "block"` with a reason (exit 0; for UserPromptSubmit also `continue: false`),
    or exit 2 with stderr, as Codex reads a UserPromptSubmit, PostToolUse or Stop hook."""
    if run.failure is not None:
        return None
    if run.exit_code == 2:
        return run.stderr.strip() or None
    if run.exit_code != 0:
        return None
    data = run.json_output()
    if data is None:
        return None
    if data.get("decision") == "block":
        return _text(data.get("reason"))
    if data.get("continue") is False and run.handler.event == "UserPromptSubmit":
        # Codex's universal `continue: false`: the prompt goes no further (`stopReason`). At a
        # Stop it would mean "stop", which is what happens anyway.
        return _text(data.get("stopReason")) or f"stopped by the {run.handler.event} hook"
    return None


def _contexts(runs: Sequence[HookRun]) -> list[str]:
    """`hookSpecificOutput.additionalContext`, or a plain-text stdout, of hooks that exited 0."""
    found: list[str] = []
    for run in runs:
        if run.exit_code != 0 or run.failure is not None:
            continue
        data = run.json_output()
        if data is None:
            if run.stdout.strip() and run.handler.event in ("SessionStart", "UserPromptSubmit"):
                found.append(run.stdout.strip())
            continue
        specific = data.get("hookSpecificOutput")
        if isinstance(specific, dict):
            context = _text(specific.get("additionalContext"))
            if context:
                found.append(context)
    return found


def _arguments(call: ToolCall) -> dict[str, Any]:
    if call.call_type == "custom":
        return {"input": call.arguments}
    try:
        value = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        return {"input": call.arguments}
    return value if isinstance(value, dict) else {"input": value}


def _command_text(arguments: Mapping[str, Any], renames: Mapping[str, str]) -> str:
    for model_name, value in arguments.items():
        if renames.get(model_name, model_name) in ("command", "cmd"):
            if isinstance(value, list):
                return shlex.join(str(part) for part in value)
            return str(value)
    return ""


def _text(value: object) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def _first_line(text: str) -> str:
    stripped = text.strip()
    return stripped.splitlines()[0] if stripped else ""
