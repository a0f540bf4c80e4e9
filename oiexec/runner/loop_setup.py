"""What `runner/exec.py` builds for a run from its prepared settings: the agent loop (with the
model options and limits the request and config ask for), the run log, and the history the
loop starts from (a new thread's opening context, or what a resumed or forked session needs
before the new prompt).

Kept apart from the composition root so that it reads as the steps of a run, not as the
arguments of constructors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from oiexec.core.types import Message
from oiexec.runner.sessions import (
    SettingChange,
    environment_differs,
    killed_note,
    turn_context,
)

if TYPE_CHECKING:
    from oiexec.agent.final import FinalAnswerPolicy
    from oiexec.agent.loop import AgentLoop
    from oiexec.core.context import ToolContext
    from oiexec.core.events import ThreadEvent
    from oiexec.core.protocols import Harness, ModelClient, SessionStore, ToolGate
    from oiexec.core.types import HistoryItem
    from oiexec.output.runlog import RunLogSink
    from oiexec.runner.extras import Extras
    from oiexec.runner.prepare import Prepared

__all__ = ["continued_context", "new_loop", "open_runlog", "opening_history"]


def new_loop(
    p: Prepared,
    *,
    client: ModelClient,
    harness: Harness,
    ctx: ToolContext,
    emit: Callable[[ThreadEvent], None],
    store: SessionStore,
    on_step: Callable[[int], None],
    final: FinalAnswerPolicy,
    gate: ToolGate | None,
    deadline: float | None,
) -> AgentLoop:
    """The loop for one run: every history item and compaction recorded in `store`."""
    from oiexec.agent.loop import AgentLoop, LoopLimits, ModelOptions

    settings, request = p.config.settings, p.request
    return AgentLoop(
        client=client,
        harness=harness,
        ctx=ctx,
        emit=emit,
        record=lambda item: store.append("response_item", item.model_dump()),
        options=ModelOptions(
            model=settings.model,
            reasoning_effort=settings.model_reasoning_effort,
            reasoning_summary=settings.model_reasoning_summary,
            output_schema=p.output_schema,
            prompt_cache_key=store.thread_id,
        ),
        limits=LoopLimits(
            max_turns=request.max_turns,
            deadline=deadline,
            max_tokens=request.max_tokens,
            max_cost=request.max_cost,
            # Only --max-cost spends a price here (prepare has it by then); the catalog's
            # look-up is not waited for otherwise.
            price=p.facts.price if request.max_cost is not None else None,
            # Asked only once the history nears the smallest real window; the catalog's
            # look-up starts a little before that, and a short run never makes it.
            context_window=lambda: p.facts.context_window,
            context_window_soon=p.pending_facts.begin,
            auto_compact_tokens=settings.model_auto_compact_token_limit,
        ),
        on_compacted=lambda payload: store.append("compacted", payload),
        on_step=on_step,
        final=final,
        instructions=p.hooks.instructions,
        gate=gate,
    )


def open_runlog(prepared: Prepared, warn: Callable[[str], None]) -> RunLogSink | None:
    """The day's run log under the home, or None (and a warning) when it cannot be opened:
    an unwritable home must not stop the task."""
    from oiexec.output.runlog import RunLogSink

    try:
        return RunLogSink(
            prepared.config.home,
            model=prepared.config.settings.model,
            provider=prepared.provider_id,
            sandbox=prepared.policy.mode,
            cwd=str(prepared.request.cwd),
        )
    except OSError as exc:
        warn(f"no run log: {exc.strerror or exc}")
        return None


def continued_context(
    p: Prepared,
    harness: Harness,
    store: SessionStore,
    warn: Callable[[str], None],
    changes: list[SettingChange],
) -> list[HistoryItem]:
    """On a resumed or forked history: announce a re-selected harness (added to `changes`), and
    tell the model the environment enforced now when it is not the one the history describes."""
    continued, request = p.continued, p.request
    if continued is None:
        return []
    recorded = continued.settings
    verb = "fork" if request.fork_from else "resume"
    note = killed_note(continued, verb)
    if note is not None:
        warn(note)
        if not request.fork_from:
            aborted = {"type": "turn_aborted", "reason": "killed"}
            store.append("event_msg", {**aborted, "closed_calls": continued.closed_calls})
    if recorded.harness and recorded.harness != harness.id:
        origin = p.config.origins.get("harness")
        source = "the model given now" if origin is None else origin
        change = SettingChange("harness", recorded.harness, harness.id, source)
        changes.append(change)
        warn(change.line(verb))
    if not environment_differs(recorded, request.cwd, p.policy):
        return []
    item = harness.environment_context(request.cwd, p.policy)
    if item is None:
        return []
    store.append("response_item", item.model_dump())
    return [item]


def opening_history(
    p: Prepared,
    harness: Harness,
    store: SessionStore,
    earlier: list[HistoryItem],
    extras: Extras,
    warn: Callable[[str], None],
    changes: list[SettingChange],
) -> list[HistoryItem]:
    """The history the loop starts from, each new item written to the rollout as it is added:
    the session's own (`earlier`), or the harness's opening context on a new thread; the
    turn's context record; what SessionStart / UserPromptSubmit hooks add; then the prompt."""
    request = p.request
    history = list(earlier)
    if not history:
        for item in harness.initial_context(request.cwd, p.policy):
            history.append(item)
            store.append("response_item", item.model_dump())
    else:
        history.extend(continued_context(p, harness, store, warn, changes))
    store.append(
        "turn_context",
        turn_context(
            request.cwd,
            p.policy,
            p.config.settings,
            provider_id=p.provider_id,
            harness_id=harness.id,
            output_schema=p.output_schema,
            changes=changes,
        ),
    )
    # Hook context for the model, or a refused prompt.
    for item in extras.opening_context(request.prompt, resumed=bool(earlier)):
        history.append(item)
        store.append("response_item", item.model_dump())
    prompt = Message(role="user", text=request.prompt, images=p.images)
    history.append(prompt)
    store.append("response_item", prompt.model_dump())
    return history
