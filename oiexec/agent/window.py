"""Keeping a run's requests inside the model's context window: the history is compacted
before a request that would nearly fill the window, and compacted and sent once more when the
provider still refuses a request as too long. What the run is told and what the rollout
keeps are decided here; agent/compact.py does the arithmetic and the rebuilding.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from oiexec.agent.compact import Compactor, has_turns
from oiexec.core.context import ToolContext
from oiexec.core.errors import ContextWindowExceeded
from oiexec.core.events import ErrorItem
from oiexec.core.types import HistoryItem, Message, ModelResponse

__all__ = ["Window"]

_WINDOW_HINT = (
    "Set model_context_window to the model's real window so compaction starts in time, or "
    "lower tool_output_token_limit."
)

#: Sends one request made from a history (usage charged to the run).
Send = Callable[[Sequence[HistoryItem]], ModelResponse]


@dataclass
class Window:
    #: None when the harness never compacts: a request that is too long fails the run.
    compactor: Compactor | None
    ctx: ToolContext
    #: Records a compaction in the rollout: the payload of a `compacted` record (the summary
    #: and the history that replaces everything before it).
    on_compacted: Callable[[dict[str, Any]], None]
    #: Texts of the user-role messages the loop added itself (corrections, observations):
    #: compaction keeps the user's own messages, not these.
    own: set[str] = field(default_factory=set)

    def respond(self, history: list[HistoryItem], send: Send) -> ModelResponse:
        """One model request: compacted first when the history nears the context window, and
        compacted and sent once more when the provider still finds it too long. `history` is
        replaced in place when it is compacted."""
        compactor = self.compactor
        if compactor is not None and compactor.due(history):
            self._compact(history, compactor)
        try:
            response = send(history)
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
                response = send(history)
            except ContextWindowExceeded as again:
                raise ContextWindowExceeded(
                    "the request is too long for the model even after compacting the "
                    f"conversation: {again.message}",
                    hint=_WINDOW_HINT,
                ) from again
        if compactor is not None:
            compactor.observed(response, len(history))
        return response

    def _compact(self, history: list[HistoryItem], compactor: Compactor) -> None:
        try:
            done = compactor.compact(history, self.own)
        except ContextWindowExceeded as exc:
            raise ContextWindowExceeded(
                f"the conversation is too long for the model and so is the request to "
                f"summarise it: {exc.message}",
                hint=_WINDOW_HINT,
            ) from exc
        history[:] = done.history
        self.own &= {item.text for item in history if isinstance(item, Message)}
        self.on_compacted(
            {
                "message": done.summary,
                "replacement_history": [item.model_dump(mode="json") for item in done.history],
            }
        )
        # Codex's exec stream has no compaction item; a warning item keeps the stream within
        # what SDKs parse, and human mode prints it as a line.
        items = self.ctx.items
        items.completed(
            ErrorItem(
                id=items.next_id(),
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
