"""The seams of the runner. Implementations are injected, never inherited from.

ModelClient   one provider wire (Responses, Chat Completions, ...)
Tool          one model-facing tool backed by a shared implementation
ToolGate      what runs around every tool call (hooks)
Harness       what a model family was tuned with: prompt, tools, history rules, completion
Sandbox       how a command is confined: in core/policy.py, beside the policy it enforces
              (so the tool context can name it without a cycle through this module)
EventSink     where events go (stdout JSONL, stderr transcript, session rollout)
EventProcessor  how a run is shown to its caller (the transcript or JSONL); one per run
SessionStore  the append-only rollout of one thread
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from oiexec.core.events import ThreadEvent
from oiexec.core.types import (
    HistoryItem,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolOutput,
    ToolSpec,
)

if TYPE_CHECKING:
    from oiexec.core.context import ItemEmitter, ToolContext
    from oiexec.core.costs import Spend
    from oiexec.core.policy import SandboxPolicy

#: Called before each retry with (attempt, max_attempts, reason).
RetryCallback = Callable[[int, int, str], None]


class ModelClient(Protocol):
    """One provider wire. Returns only complete responses, so a retried stream never
    yields an item twice."""

    def respond(self, request: ModelRequest, on_retry: RetryCallback) -> ModelResponse: ...

    def close(self) -> None: ...


class Tool(Protocol):
    """A tool the model can call. Failures are returned as output, not raised: the model
    reads them and decides what to do next."""

    @property
    def spec(self) -> ToolSpec: ...

    def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutput: ...


@dataclass(frozen=True)
class HarnessStep:
    """How a harness reads one model response: the calls to run, or the end of the run.

    `feedback` (a format-error correction) is appended to the history instead of running
    anything; `final_text` replaces the response's text as the final answer."""

    calls: tuple[ToolCall, ...] = ()
    final: bool = False
    feedback: tuple[HistoryItem, ...] = ()
    final_text: str | None = None


@dataclass(frozen=True)
class Observation:
    """What a tool's output becomes in the history; a `submission` ends the run with it as the
    final answer (mini-swe-agent's marker, SWE-agent's `submit`)."""

    items: tuple[HistoryItem, ...]
    submission: str | None = None


class Harness(Protocol):
    """What one model family sees, and every product rule of how its run goes.

    The loop asks only this: what to send (`instructions`, `tools`, `prepare_request`: the
    history rules and request fields), what a response means (`interpret`: calls to run, a
    format correction, or the final answer), what a tool's output becomes in the history and
    whether it ends the run (`observe`: completion signals such as SWE-agent's `submit`), and
    the words of a compaction. Completion rules, text actions, history shaping and the file
    tools' read-before-write state all live behind it, on the harness side."""

    @property
    def id(self) -> str: ...

    def instructions(self) -> str: ...

    def tools(self) -> Sequence[Tool]: ...

    def initial_context(self, cwd: Path, policy: SandboxPolicy) -> list[HistoryItem]: ...

    def environment_context(self, cwd: Path, policy: SandboxPolicy) -> HistoryItem | None:
        """The message telling the model the directory and sandbox enforced now, for a
        continued history whose last description no longer holds; None when this harness
        never describes them."""
        ...

    def prepare_request(self, request: ModelRequest) -> ModelRequest:
        """The request as this harness sends it: its history rewritten (history rules, task
        templates), its sampling fields and the tools it offers now."""
        ...

    def interpret(self, response: ModelResponse) -> HarnessStep:
        """Whether the turn is complete (and its final answer), or the calls to run, or the
        correction to send when the reply broke the action format."""
        ...

    def observe(self, call: ToolCall, output: ToolOutput) -> Observation:
        """What a tool's output becomes in the history, and the submission that ends the run
        when the call was one."""
        ...

    def compaction_prompts(self) -> tuple[str, str] | None:
        """The request asking the model for a summary of the conversation so far, and the
        heading the summary gets when it replaces the older turns; None when this harness
        never compacts."""
        ...

    def finish_turn(self, ctx: ToolContext) -> None:
        """Completes what the turn left open (the plan item) after the final answer."""
        ...

    def close(self) -> None:
        """Kills what tools left running (process groups); called however the run ends."""
        ...


class ToolGate(Protocol):
    """Runs around every tool call the loop makes (the configured hooks): may refuse a call
    before it runs, and sees (and may replace) its output after."""

    def before(self, call: ToolCall) -> str | None:
        """None lets the call run; a text refuses it and is what the model reads instead."""
        ...

    def after(self, call: ToolCall, output: ToolOutput) -> ToolOutput: ...


class EventSink(Protocol):
    def emit(self, event: ThreadEvent) -> None: ...

    def close(self) -> None: ...


class SessionStore(Protocol):
    """The rollout of one thread: appended and flushed record by record."""

    @property
    def thread_id(self) -> str: ...

    @property
    def path(self) -> Path | None: ...

    def append(self, record_type: str, payload: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


class EventProcessor(EventSink, Protocol):
    """How one run is shown to whoever started it: a transcript for people or JSONL events
    for programs (codex-rs/exec's `EventProcessor`). The runner picks one when it starts and
    talks only to this seam, so the output mode is decided in exactly one place."""

    def header(self, title: str, fields: Sequence[tuple[str, str]]) -> None:
        """The settings the run starts with, before `thread.started`."""
        ...

    def warning(self, text: str) -> None:
        """Something the caller should know that does not fail the run."""
        ...

    def startup_warning(self, text: str, items: ItemEmitter) -> None:
        """A config or flag warning before `turn.started`; `items` reaches every sink, for
        the modes that also report it as an item."""
        ...

    def step(self, number: int) -> None:
        """A model step begins (numbered from 1)."""
        ...

    def final_output(self, message: str) -> None:
        """The accepted final answer of a run that succeeded."""
        ...

    def spent(self, spend: Spend) -> None:
        """What the run spent, after its last event whatever the outcome: the transcript's
        closing line (in JSON mode `turn.completed` carries it)."""
        ...
