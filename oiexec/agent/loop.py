"""The agent loop: ask the model, run its tool calls, feed the results back, until it answers
without tool calls, a limit is hit, or something fails.

It knows nothing about wires, harness prompts or sandboxes: those arrive behind the
`ModelClient`, `Harness` and `Tool` seams. Failures propagate as `OiexecError`s; the runner
turns them into `turn.failed` and an exit code.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from oiexec.errors import MaxTurnsExceeded, ProviderError, RunTimedOut
from oiexec.events import AgentMessageItem, ReasoningItem, StreamError, ThreadEvent, Usage
from oiexec.protocols import Harness, ModelClient, Tool
from oiexec.tools.base import ToolContext
from oiexec.types import HistoryItem, Message, ModelRequest, Reasoning, ToolCall, ToolOutput


@dataclass(frozen=True)
class LoopLimits:
    #: Model requests allowed in this invocation (None = unlimited).
    max_turns: int | None = None
    #: `time.monotonic()` deadline of the whole run.
    deadline: float | None = None


@dataclass(frozen=True)
class ModelOptions:
    model: str
    reasoning_effort: str | None = None
    reasoning_summary: str | None = None
    output_schema: dict[str, Any] | None = None
    prompt_cache_key: str | None = None


@dataclass
class TurnOutcome:
    final_message: str | None
    usage: Usage
    steps: int


@dataclass
class AgentLoop:
    client: ModelClient
    harness: Harness
    ctx: ToolContext
    emit: Callable[[ThreadEvent], None]
    #: Appends one history item to the session rollout.
    record: Callable[[HistoryItem], None]
    options: ModelOptions
    limits: LoopLimits = LoopLimits()
    #: Told when a new model step starts (the human sink folds steps into CI log groups).
    on_step: Callable[[int], None] = lambda _step: None
    #: Checks a final answer; returns a correction for the model, or None when it is fine.
    validate_final: Callable[[str], str | None] | None = None
    _tools: dict[str, Tool] = field(init=False)

    def __post_init__(self) -> None:
        self._tools = {tool.spec.name: tool for tool in self.harness.tools()}

    def run(self, history: list[HistoryItem], usage: Usage) -> TurnOutcome:
        """Runs until a final answer. `history` is extended in place (and recorded)."""
        steps = 0
        corrected = False
        while True:
            self._check_deadline()
            if self.limits.max_turns is not None and steps >= self.limits.max_turns:
                raise MaxTurnsExceeded(
                    f"turn limit reached: the model still had work to do after "
                    f"--max-turns {self.limits.max_turns} model turns"
                )
            steps += 1
            self.on_step(steps)
            response = self.client.respond(self._request(history), self._on_retry)
            usage = usage.plus(response.usage)
            self._append(history, response.items)
            self._emit_response_items(response.items)
            calls = response.tool_calls
            if calls:
                for call in calls:
                    self._check_deadline()
                    self._append(history, [self._run_tool(call)])
                continue
            final = response.final_text
            if final is None:
                raise ProviderError("the model ended its turn without a message or a tool call")
            problem = self.validate_final(final) if self.validate_final else None
            if problem is None:
                return TurnOutcome(final, usage, steps)
            if corrected:
                raise ProviderError(f"the final answer is still invalid: {problem}")
            corrected = True
            self._append(history, [Message(role="user", text=problem)])

    def _request(self, history: Sequence[HistoryItem]) -> ModelRequest:
        return ModelRequest(
            model=self.options.model,
            instructions=self.harness.instructions(),
            history=tuple(history),
            tools=tuple(tool.spec for tool in self._tools.values()),
            output_schema=self.options.output_schema,
            reasoning_effort=self.options.reasoning_effort,
            reasoning_summary=self.options.reasoning_summary,
            prompt_cache_key=self.options.prompt_cache_key,
        )

    def _append(self, history: list[HistoryItem], items: Sequence[HistoryItem]) -> None:
        for item in items:
            history.append(item)
            self.record(item)

    def _emit_response_items(self, items: Sequence[HistoryItem]) -> None:
        emitter = self.ctx.items
        for item in items:
            if isinstance(item, Reasoning):
                # Chat wires carry plain reasoning text instead of a summary.
                parts = item.summary or ((item.content,) if item.content else ())
                text = "\n".join(part for part in parts if part.strip())
                if text:
                    emitter.completed(ReasoningItem(id=emitter.next_id(), text=text))
            elif isinstance(item, Message) and item.role == "assistant" and item.text:
                emitter.completed(AgentMessageItem(id=emitter.next_id(), text=item.text))

    def _run_tool(self, call: ToolCall) -> ToolOutput:
        tool = self._tools.get(call.name)
        if tool is None:
            known = ", ".join(sorted(self._tools))
            return ToolOutput(
                call_id=call.call_id,
                call_type=call.call_type,
                output=f"unsupported call: there is no tool named `{call.name}`. "
                f"Available tools: {known}.",
                is_error=True,
            )
        return tool.run(call, self.ctx)

    def _on_retry(self, attempt: int, max_attempts: int, reason: str) -> None:
        self._check_deadline()
        self.emit(StreamError(message=f"Reconnecting... {attempt}/{max_attempts} ({reason})"))

    def _check_deadline(self) -> None:
        if self.limits.deadline is not None and time.monotonic() >= self.limits.deadline:
            raise RunTimedOut("time limit reached: the run exceeded --timeout")


def schema_validator(schema: dict[str, Any]) -> Callable[[str], str | None]:
    """Checks a final answer against `--output-schema`, returning a correction for the model."""
    import jsonschema

    validator_cls = jsonschema.validators.validator_for(schema)
    validator = validator_cls(schema)

    def check(text: str) -> str | None:
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            return (
                f"Your final answer must be a single JSON value matching the output schema, "
                f"with no other text. It did not parse as JSON ({exc.msg} at line {exc.lineno}). "
                "Reply again with only the JSON."
            )
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.path))
        if not errors:
            return None
        where = "/".join(str(p) for p in errors[0].path) or "(root)"
        return (
            f"Your final answer does not match the output schema: at {where}: "
            f"{errors[0].message}. Reply again with only the corrected JSON."
        )

    return check
