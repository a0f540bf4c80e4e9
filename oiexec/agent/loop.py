"""The agent loop: ask the model, run its tool calls, feed the results back, until it answers
without tool calls, a limit is hit, or something fails.

It knows nothing about wires, harness prompts or sandboxes: those arrive behind the
`ModelClient`, `Harness` and `Tool` seams. Failures propagate as `OiexecError`s; the runner
turns them into `turn.failed` and an exit code.

Long runs: before each request the history is compacted when it nears the context window
(agent/compact.py, worded by a `CompactingHarness`), and after each response the run's
spending is checked against `--max-tokens` / `--max-cost` (agent/budget.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from oiexec.agent.budget import Budget
from oiexec.agent.compact import Compactor, estimate_request, has_turns, thresholds
from oiexec.agent.final import FinalAnswerPolicy, PlainAnswer, Retry
from oiexec.core.call_screen import screen_response
from oiexec.core.context import ToolContext
from oiexec.core.errors import (
    ContextWindowExceeded,
    LimitExceeded,
    MaxTurnsExceeded,
    ModelFacingError,
    ProviderError,
    RunTimedOut,
    ToolInputError,
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
from oiexec.core.protocols import (
    CompactingHarness,
    DrivingHarness,
    Harness,
    HarnessStep,
    ModelClient,
    Tool,
    ToolGate,
)
from oiexec.core.redact import redact
from oiexec.core.types import (
    HistoryItem,
    Message,
    ModelRequest,
    ModelResponse,
    Reasoning,
    ToolCall,
    ToolOutput,
)

_WINDOW_HINT = (
    "Set model_context_window to the model's real window so compaction starts in time, or "
    "lower tool_output_token_limit."
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
    #: `model_auto_compact_token_limit`: compact at this request size (else 90% of the window).
    auto_compact_tokens: int | None = None


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
    #: Records a compaction in the rollout: the payload of a `compacted` record (the summary
    #: and the history that replaces everything before it).
    on_compacted: Callable[[dict[str, Any]], None] = lambda _payload: None
    #: Runs around every tool call (pre/post tool hooks); None runs calls as they come.
    gate: ToolGate | None = None
    #: Model requests made so far (also after a limit or failure ended the run).
    steps: int = field(default=0, init=False)
    #: The thread's usage so far, this run's requests included (also after a failure).
    usage: Usage = field(default_factory=Usage, init=False)
    _tools: dict[str, Tool] = field(init=False)
    #: Names of the tools the last request offered (a harness may hold some back).
    _offered: tuple[str, ...] = field(default=(), init=False)
    _budget: Budget = field(init=False)
    _compactor: Compactor | None = field(init=False)
    #: Texts of the user-role messages the loop added itself (corrections, observations).
    _own: set[str] = field(default_factory=set, init=False)
    #: Call id -> why the call is not run (too large, not JSON: core/call_screen.py).
    _refused: dict[str, ToolInputError] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self._tools = {tool.spec.name: tool for tool in self.harness.tools()}
        limits = self.limits
        self._budget = Budget(limits.max_tokens, limits.max_cost, limits.price)
        self._compactor = None
        if isinstance(self.harness, CompactingHarness):
            instruction, heading = self.harness.compaction_prompts()
            window, trigger = thresholds(limits.context_window, limits.auto_compact_tokens)
            self._compactor = Compactor(
                window=window,
                trigger=trigger,
                instruction=instruction,
                summary_heading=heading,
                context=lambda: self.harness.initial_context(self.ctx.cwd, self.ctx.sandbox.policy),
                send=self._summary_request,
                measure=lambda items: estimate_request(self._request(items)),
            )

    def run(self, history: list[HistoryItem], usage: Usage) -> TurnOutcome:
        """Runs until a final answer. `history` is extended in place (and recorded), and
        replaced in place when it is compacted."""
        self.usage = usage
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
            response = self._respond(history)
            self._append(history, response.items)
            step = self._interpret(response)
            self._emit_response_items(response.items, final=step.final)
            text: str | None
            if step.final:
                text = step.final_text if step.final_text is not None else response.final_text
            else:
                self._append(history, step.feedback, own=True)
                text = self._run_calls(history, step.calls)
                if text is None:
                    continue
            if text is None:
                raise ProviderError("the model ended its turn without a message or a tool call")
            # The one place the answer is redacted: every policy, hook, item, report, session
            # record and API result below takes this text (the model may echo a secret).
            text = redact(text)
            attempt += 1
            verdict = self.final.accept(text, attempt)
            if isinstance(verdict, Retry) and not verdict.shown:
                self._append(history, [Message(role="user", text=verdict.message)], own=True)
                continue
            if isinstance(verdict, Retry):
                self.ctx.items.completed(
                    ErrorItem(
                        id=self.ctx.items.next_id(),
                        message="final answer rejected, asking for a correction: "
                        + (verdict.notice or verdict.message),
                    )
                )
                self._append(history, [Message(role="user", text=verdict.message)], own=True)
                continue
            self.final.present(verdict, self.ctx.items)
            return TurnOutcome(verdict, self.usage, self.steps)

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
            self._append(history, observed.items, own=True)
            if observed.submission is not None:
                return observed.submission
        return None

    def _request(self, history: Sequence[HistoryItem]) -> ModelRequest:
        request = self._base_request(history)
        if isinstance(self.harness, DrivingHarness):
            request = self.harness.prepare_request(request)
        self._offered = tuple(spec.name for spec in request.tools)
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

    def _append(
        self, history: list[HistoryItem], items: Sequence[HistoryItem], *, own: bool = False
    ) -> None:
        for item in items:
            if own and isinstance(item, Message):
                self._own.add(item.text)
            history.append(item)
            self.record(item)

    # -- requests, budgets and compaction --------------------------------------------------

    def _respond(self, history: list[HistoryItem]) -> ModelResponse:
        """One model request: compacted first when the history nears the context window, and
        compacted and sent once more when the provider still finds it too long."""
        compactor = self._compactor
        if compactor is not None and compactor.due(history):
            self._compact(history, compactor)
        try:
            response = self.client.respond(self._request(history), self._on_retry)
        except ContextWindowExceeded as exc:
            if compactor is None:
                raise
            if not has_turns(history):
                raise ContextWindowExceeded(
                    f"{exc.message} (nothing to compact yet: the instructions, the initial "
                    "context and the prompt alone are too long for the model)",
                    hint="Shorten the prompt or AGENTS.md, or use a model with a larger window.",
                ) from exc
            self.ctx.warn("the model refused the request as too long: compacting the conversation")
            self._compact(history, compactor)
            try:
                response = self.client.respond(self._request(history), self._on_retry)
            except ContextWindowExceeded as again:
                raise ContextWindowExceeded(
                    "the request is too long for the model even after compacting the "
                    f"conversation: {again.message}",
                    hint=_WINDOW_HINT,
                ) from again
        self._charge(response)
        if compactor is not None:
            compactor.observed(response, len(history))
        # Before anything keeps or runs a call: an oversized or unparsable one becomes a stub.
        response, refused = screen_response(response)
        self._refused.update(refused)
        return response

    def _summary_request(self, items: Sequence[HistoryItem]) -> ModelResponse:
        """The compaction's request for a summary: the harness's shaping, no answer schema."""
        self._check_deadline()
        request = self._request(items).model_copy(update={"output_schema": None})
        response = self.client.respond(request, self._on_retry)
        self._charge(response)
        return response

    def _charge(self, response: ModelResponse) -> None:
        self.usage = self.usage.plus(response.usage)
        self._budget.charge(response.usage)

    def _compact(self, history: list[HistoryItem], compactor: Compactor) -> None:
        try:
            done = compactor.compact(history, self._own)
        except ContextWindowExceeded as exc:
            raise ContextWindowExceeded(
                f"the conversation is too long for the model and so is the request to "
                f"summarise it: {exc.message}",
                hint=_WINDOW_HINT,
            ) from exc
        history[:] = done.history
        self._own &= {item.text for item in history if isinstance(item, Message)}
        self.on_compacted(
            {
                "message": done.summary,
                "replacement_history": [item.model_dump(mode="json") for item in done.history],
            }
        )
        # Codex's exec stream has no compaction item; a warning item keeps the stream within
        # what SDKs parse, and human mode prints it as a line.
        self.ctx.items.completed(
            ErrorItem(
                id=self.ctx.items.next_id(),
                message=f"context compacted: about {done.before_tokens:,} tokens of history "
                f"became {done.after_tokens:,} (context window {compactor.window:,}); "
                f"{done.summarised} earlier items were summarised by the model",
            )
        )
        size = compactor.estimate(history)
        if size > compactor.window:
            raise ContextWindowExceeded(
                f"the conversation does not fit in the model's context window of "
                f"{compactor.window:,} tokens even after compacting it (about {size:,} tokens: "
                "instructions, tools, initial context and the latest turn)",
                hint=_WINDOW_HINT,
            )

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
        refused = self._refused.pop(call.call_id, None)
        if refused is not None:  # never run, so neither hooks nor the tool see it
            self.ctx.warn(refused.message)
            return ToolOutput(
                call_id=call.call_id,
                call_type=call.call_type,
                output=refused.message,
                is_error=True,
            )
        if self.gate is None:
            return self._call_tool(call)
        refusal = self.gate.before(call)
        if refusal is not None:
            return ToolOutput(
                call_id=call.call_id, call_type=call.call_type, output=refusal, is_error=True
            )
        return self.gate.after(call, self._call_tool(call))

    def _call_tool(self, call: ToolCall) -> ToolOutput:
        tool = self._tools.get(call.name)
        if tool is None:
            # What the model was offered, not every tool there is: naming tools deferred
            # behind a search would undo the deferral.
            known = ", ".join(sorted(self._offered or self._tools))
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
