"""The agent loop: ask the model, run its tool calls, feed the results back, until it answers
without tool calls, a limit is hit, or something fails.

It knows nothing about wires, harness prompts or sandboxes: those arrive behind the
`ModelClient`, `Harness` and `Tool` seams. Failures propagate as `OiexecError`s; the runner
turns them into `turn.failed` and an exit code.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from oiexec.agent.final import FinalAnswerPolicy, PlainAnswer, Retry
from oiexec.core.context import ToolContext
from oiexec.core.errors import (
    LimitExceeded,
    MaxTurnsExceeded,
    ModelFacingError,
    ProviderError,
    RunTimedOut,
)
from oiexec.core.events import (
    AgentMessageItem,
    ErrorItem,
    ModelPrice,
    ReasoningItem,
    StreamError,
    ThreadEvent,
    Usage,
)
from oiexec.core.protocols import DrivingHarness, Harness, HarnessStep, ModelClient, Tool
from oiexec.core.types import (
    HistoryItem,
    Message,
    ModelRequest,
    ModelResponse,
    Reasoning,
    ToolCall,
    ToolOutput,
)


@dataclass(frozen=True)
class LoopLimits:
    #: Model requests allowed in this invocation (None = unlimited).
    max_turns: int | None = None
    #: `time.monotonic()` deadline of the whole run.
    deadline: float | None = None
    #: `--max-tokens`: input + output tokens this invocation may use.
    max_tokens: int | None = None
    #: `--max-cost` in USD, priced with `price` (the runner refuses a budget without a price).
    max_cost: float | None = None
    price: ModelPrice | None = None
    #: The model's context window in tokens (config, else the model catalog), for compaction.
    context_window: int | None = None


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
    final: FinalAnswerPolicy = field(default_factory=PlainAnswer)
    #: Replaces the harness's instructions (the review rubric).
    instructions: str | None = None
    #: Model requests made so far (also after a limit or failure ended the run).
    steps: int = field(default=0, init=False)
    _tools: dict[str, Tool] = field(init=False)

    def __post_init__(self) -> None:
        self._tools = {tool.spec.name: tool for tool in self.harness.tools()}

    def run(self, history: list[HistoryItem], usage: Usage) -> TurnOutcome:
        """Runs until a final answer. `history` is extended in place (and recorded)."""
        attempt = 0
        while True:
            self._check_deadline()
            if self.limits.max_turns is not None and self.steps >= self.limits.max_turns:
                raise MaxTurnsExceeded(
                    f"turn limit reached: the model still had work to do after "
                    f"--max-turns {self.limits.max_turns} model turns"
                )
            self.steps += 1
            self.on_step(self.steps)
            response = self.client.respond(self._request(history), self._on_retry)
            usage = usage.plus(response.usage)
            self._append(history, response.items)
            step = self._interpret(response)
            self._emit_response_items(response.items, final=step.final)
            text: str | None
            if step.final:
                text = step.final_text if step.final_text is not None else response.final_text
            else:
                self._append(history, step.feedback)
                text = self._run_calls(history, step.calls)
                if text is None:
                    continue
            if text is None:
                raise ProviderError("the model ended its turn without a message or a tool call")
            attempt += 1
            verdict = self.final.accept(text, attempt)
            if isinstance(verdict, Retry):
                self.ctx.items.completed(
                    ErrorItem(
                        id=self.ctx.items.next_id(),
                        message="final answer rejected, asking for a correction: "
                        + (verdict.notice or verdict.message),
                    )
                )
                self._append(history, [Message(role="user", text=verdict.message)])
                continue
            self.final.present(verdict, self.ctx.items)
            return TurnOutcome(verdict, usage, self.steps)

    def _interpret(self, response: ModelResponse) -> HarnessStep:
        if isinstance(self.harness, DrivingHarness):
            return self.harness.interpret(response)
        if self.harness.is_complete(response):
            return HarnessStep(final=True)
        return HarnessStep(calls=tuple(response.tool_calls))

    def _run_calls(self, history: list[HistoryItem], calls: Sequence[ToolCall]) -> str | None:
        """Runs `calls` in order; returns a submission that ends the run, if one came."""
        for call in calls:
            self._check_deadline()
            output = self._run_tool(call)
            if not isinstance(self.harness, DrivingHarness):
                self._append(history, [output])
                continue
            observed = self.harness.observe(call, output)
            self._append(history, observed.items)
            if observed.submission is not None:
                return observed.submission
        return None

    def _request(self, history: Sequence[HistoryItem]) -> ModelRequest:
        request = self._base_request(history)
        if isinstance(self.harness, DrivingHarness):
            return self.harness.prepare_request(request)
        return request

    def _base_request(self, history: Sequence[HistoryItem]) -> ModelRequest:
        return ModelRequest(
            model=self.options.model,
            instructions=self.instructions or self.harness.instructions(),
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

    def _emit_response_items(self, items: Sequence[HistoryItem], *, final: bool) -> None:
        emitter = self.ctx.items
        for item in items:
            if isinstance(item, Reasoning):
                # Chat wires carry plain reasoning text instead of a summary.
                parts = item.summary or ((item.content,) if item.content else ())
                text = "\n".join(part for part in parts if part.strip())
                if text:
                    emitter.completed(ReasoningItem(id=emitter.next_id(), text=text))
            elif isinstance(item, Message) and item.role == "assistant" and item.text and not final:
                # Commentary between tool calls; the final answer goes through the policy.
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
        try:
            return tool.run(call, self.ctx)
        except LimitExceeded:
            raise  # a limit reached inside a tool ends the run (interrupts are BaseException)
        except ModelFacingError as exc:
            return ToolOutput(
                call_id=call.call_id, call_type=call.call_type, output=exc.message, is_error=True
            )
        except Exception as exc:
            # A bug in one tool should cost the model one call, not the whole run.
            self.ctx.warn(f"tool `{call.name}` failed: {type(exc).__name__}: {exc}")
            return ToolOutput(
                call_id=call.call_id,
                call_type=call.call_type,
                output=f"internal error in tool `{call.name}`: {type(exc).__name__}: {exc}",
                is_error=True,
            )

    def _on_retry(self, attempt: int, max_attempts: int, reason: str) -> None:
        self._check_deadline()
        self.emit(StreamError(message=f"Reconnecting... {attempt}/{max_attempts} ({reason})"))

    def _check_deadline(self) -> None:
        if self.limits.deadline is not None and time.monotonic() >= self.limits.deadline:
            raise RunTimedOut("time limit reached: the run exceeded --timeout")
