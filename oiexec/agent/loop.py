"""The agent loop: ask the model, run its tool calls, feed the results back, until the harness
says the run is complete, a limit is hit, or something fails.

It knows nothing about wires, harness prompts or sandboxes: those arrive behind the
`ModelClient`, `Harness` and `Tool` seams, and every product rule (completion signals, text
actions, history rules) is the harness's answer to one of its questions. Failures propagate as
`OiexecError`s; the runner turns them into `turn.failed` and an exit code.

Around it: agent/calls.py runs the tool calls, agent/window.py keeps requests inside the
context window (compaction, agent/compact.py), agent/budget.py checks `--max-tokens` /
`--max-cost` after every response, agent/final.py decides what counts as the final answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from oiexec.agent.budget import Budget
from oiexec.agent.calls import ToolRunner
from oiexec.agent.compact import Compactor, estimate_request, floor_before_lookup, thresholds
from oiexec.agent.final import FinalAnswerPolicy, PlainAnswer, Retry
from oiexec.agent.window import Window
from oiexec.core.context import ToolContext
from oiexec.core.errors import MaxTurnsExceeded, ProviderError, RunTimedOut
from oiexec.core.events import (
    AgentMessageItem,
    ErrorItem,
    ModelPrice,
    ReasoningItem,
    StreamError,
    ThreadEvent,
    Usage,
)
from oiexec.core.protocols import Harness, ModelClient, ToolGate
from oiexec.core.redact import redact
from oiexec.core.types import (
    HistoryItem,
    Message,
    ModelRequest,
    ModelResponse,
    Reasoning,
    ToolCall,
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
    #: The model's context window in tokens (config, else the model catalog), for compaction;
    #: or what gives it when first needed (a catalog look-up still under way).
    context_window: int | Callable[[], int | None] | None = None
    #: Starts what gives a pending `context_window` (it will be asked for soon).
    context_window_soon: Callable[[], None] | None = None
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
    _calls: ToolRunner = field(init=False)
    _budget: Budget = field(init=False)
    _window: Window = field(init=False)

    def __post_init__(self) -> None:
        self._calls = ToolRunner(self.harness.tools(), self.ctx, self.gate)
        limits = self.limits
        self._budget = Budget(limits.max_tokens, limits.max_cost, limits.price)
        compactor = None
        prompts = self.harness.compaction_prompts()
        if prompts is not None:
            pending = callable(limits.context_window)
            compactor = Compactor(
                sizes=lambda: thresholds(_known(limits.context_window), limits.auto_compact_tokens),
                floor=floor_before_lookup(limits.auto_compact_tokens) if pending else 0,
                soon=limits.context_window_soon or (lambda: None),
                instruction=prompts[0],
                summary_heading=prompts[1],
                context=lambda: self.harness.initial_context(self.ctx.cwd, self.ctx.sandbox.policy),
                send=self._summary_request,
                measure=lambda items: estimate_request(self._request(items)),
            )
        self._window = Window(compactor, self.ctx, self.on_compacted)

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
            response = self._calls.screen(self._window.respond(history, self._send))
            self._append(history, response.items)
            step = self.harness.interpret(response)
            self._show(response.items, final=step.final)
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
            if isinstance(verdict, Retry):
                if verdict.shown:
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

    def _run_calls(self, history: list[HistoryItem], calls: Sequence[ToolCall]) -> str | None:
        """Runs `calls` in order; returns a submission that ends the run, if one came."""
        for call in calls:
            self._check_deadline()
            observed = self.harness.observe(call, self._calls.run(call))
            self._append(history, observed.items, own=True)
            if observed.submission is not None:
                return observed.submission
        return None

    def _append(
        self, history: list[HistoryItem], items: Sequence[HistoryItem], *, own: bool = False
    ) -> None:
        for item in items:
            if own and isinstance(item, Message):
                self._window.own.add(item.text)
            history.append(item)
            self.record(item)

    # -- requests ---------------------------------------------------------------------------

    def _request(self, history: Sequence[HistoryItem]) -> ModelRequest:
        request = self.harness.prepare_request(
            ModelRequest(
                model=self.options.model,
                instructions=self.instructions or self.harness.instructions(),
                history=tuple(history),
                tools=self._calls.specs(),
                output_schema=self.options.output_schema,
                reasoning_effort=self.options.reasoning_effort,
                reasoning_summary=self.options.reasoning_summary,
                prompt_cache_key=self.options.prompt_cache_key,
            )
        )
        self._calls.offered(request)
        return request

    def _send(self, history: Sequence[HistoryItem]) -> ModelResponse:
        return self._charge(self.client.respond(self._request(history), self._on_retry))

    def _summary_request(self, items: Sequence[HistoryItem]) -> ModelResponse:
        """The compaction's request for a summary: the harness's shaping, no answer schema."""
        self._check_deadline()
        request = self._request(items).model_copy(update={"output_schema": None})
        return self._charge(self.client.respond(request, self._on_retry))

    def _charge(self, response: ModelResponse) -> ModelResponse:
        self.usage = self.usage.plus(response.usage)
        self._budget.charge(response.usage)
        return response

    def _show(self, items: Sequence[HistoryItem], *, final: bool) -> None:
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

    def _on_retry(self, attempt: int, max_attempts: int, reason: str) -> None:
        self._check_deadline()
        self.emit(StreamError(message=f"Reconnecting... {attempt}/{max_attempts} ({reason})"))

    def _check_deadline(self) -> None:
        if self.limits.deadline is not None and time.monotonic() >= self.limits.deadline:
            raise RunTimedOut("time limit reached: the run exceeded --timeout")


def _known(window: int | Callable[[], int | None] | None) -> int | None:
    return window() if callable(window) else window
