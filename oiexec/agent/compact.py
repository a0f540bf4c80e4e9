"""Context compaction: when the next request would nearly fill the model's context window, the
model summarises the conversation so far and the history is rebuilt around that summary.

The rebuilt history is, in order: the harness's initial context made afresh (instructions
file, environment context), the user's own messages (newest first within a budget, as Codex
keeps them), the summary as a user message, and the latest model turns with their tool
results (as many as fit in what the rest leaves, at least the last one, its results cut if
need be), so the model picks up exactly where it was. The words of the summarisation
request and of the summary's heading are the harness's (`Harness.compaction_prompts`); this
module only does the arithmetic and the rebuilding.

Sizes are estimated in the same unit as the tool output caps (`oiexec.core.tokens`), and
corrected upwards by the input tokens the provider last reported when those are larger.
"""

from __future__ import annotations

import functools
import json
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from oiexec.core.errors import ContextWindowExceeded
from oiexec.core.tokens import approx_tokens, truncate_middle
from oiexec.core.types import (
    HistoryItem,
    Message,
    ModelRequest,
    ModelResponse,
    Reasoning,
    ToolCall,
    ToolOutput,
)

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "Compaction",
    "Compactor",
    "estimate_request",
    "floor_before_lookup",
    "has_turns",
    "thresholds",
]

#: The window assumed when neither config nor the model catalog knows the model's: small
#: enough for every current tool-calling model, so compaction starts too early, never too late.
DEFAULT_CONTEXT_WINDOW = 128_000
#: Without `model_auto_compact_token_limit`, compact at this share of the window (Codex's
#: default threshold is 90% of the window).
AUTO_COMPACT_SHARE = 0.9
#: Codex keeps at most this many tokens of the user's own messages after a compaction.
USER_MESSAGES_MAX_TOKENS = 20_000
#: An image counts this much (its data URL is far longer than what the model is billed).
IMAGE_TOKENS = 1_000
#: Attempts at the summarisation request, each dropping older turns when the last was too long.
SUMMARY_ATTEMPTS = 3


#: The smallest context window assumed before the real one is known (a catalog look-up is
#: put off while the history is far below it): a model with less cannot hold an agent's
#: instructions and tools. Should one have less, the provider refuses the long request and
#: the conversation is compacted then (agent/window.py).
SMALLEST_WINDOW = 8_192


def floor_before_lookup(trigger: int | None) -> int:
    """The request size below which nothing can be due, whatever the window turns out to be."""
    smallest = int(SMALLEST_WINDOW * AUTO_COMPACT_SHARE)
    return min(trigger, smallest) if trigger else smallest


def thresholds(window: int | None, trigger: int | None) -> tuple[int, int]:
    """The window to assume and the size at which to compact (`model_auto_compact_token_limit`
    when set, never past the window)."""
    size = window or DEFAULT_CONTEXT_WINDOW
    limit = trigger if trigger else int(size * AUTO_COMPACT_SHARE)
    return size, min(limit, size)


def estimate_request(request: ModelRequest) -> int:
    """Approximate input tokens of `request`: instructions, tool schemas and history."""
    tools = json.dumps([tool.model_dump(exclude_none=True) for tool in request.tools])
    return approx_tokens(request.instructions) + approx_tokens(tools) + _tokens(request.history)


#: Sizes already measured, by the item's id: the whole history is estimated before every
#: request, and serialising each item again made every turn cost as much as the history is long.
#: Items are immutable; an entry goes when its item does (the weak reference's callback), and
#: is used only while the reference still gives the very item (never a later one with its id).
_SIZES: dict[int, tuple[weakref.ref[HistoryItem], int]] = {}


def _item_tokens(item: HistoryItem) -> int:
    """An item's size as its JSON: escapes and field names count, as on every wire, which
    keeps the estimate above what a wire sends for it."""
    key = id(item)
    known = _SIZES.get(key)
    if known is not None and known[0]() is item:
        return known[1]
    if isinstance(item, Message) and item.images:
        bare = item.model_copy(update={"images": ()})
        size = approx_tokens(bare.model_dump_json()) + IMAGE_TOKENS * len(item.images)
    else:
        size = approx_tokens(item.model_dump_json())

    def forget(ref: weakref.ref[HistoryItem]) -> None:
        if _SIZES.get(key, (None, 0))[0] is ref:
            del _SIZES[key]

    _SIZES[key] = (weakref.ref(item, forget), size)
    return size


def _tokens(items: Sequence[HistoryItem]) -> int:
    return sum(_item_tokens(item) for item in items)


def _assistant_side(item: HistoryItem) -> bool:
    return isinstance(item, Reasoning | ToolCall) or (
        isinstance(item, Message) and item.role == "assistant"
    )


def _turn_starts(history: Sequence[HistoryItem]) -> list[int]:
    """Indices where a model turn begins. Cutting the history there never separates a tool
    call from its output: outputs follow their calls before the next turn."""
    return [
        i
        for i, item in enumerate(history)
        if _assistant_side(item) and (i == 0 or not _assistant_side(history[i - 1]))
    ]


def has_turns(history: Sequence[HistoryItem]) -> bool:
    """Whether the model has said anything yet that a summary could replace."""
    return bool(_turn_starts(history))


@dataclass(frozen=True)
class Compaction:
    """What one compaction did (for the event, the rollout and the tests)."""

    history: list[HistoryItem]
    #: The summary message's text (heading included), as the rollout's `compacted` record
    #: stores it.
    summary: str
    before_tokens: int
    after_tokens: int
    #: Items before the kept recent turns (the user's messages among them are kept too).
    summarised: int


@dataclass
class Compactor:
    """Decides when to compact and does it. `send` makes one model request from a history
    (shaped by the harness, usage charged to the run); `context` gives the harness's initial
    context as it would be made now."""

    #: The window to assume and the size at which to compact (`thresholds`), asked for when
    #: first needed: after the model's first answer, since nothing can be compacted before
    #: it (the catalog's answer may still be on its way while the first request is made).
    sizes: Callable[[], tuple[int, int]]
    #: The request asking for the summary, and the heading put above it in the history.
    instruction: str
    summary_heading: str
    context: Callable[[], list[HistoryItem]]
    send: Callable[[Sequence[HistoryItem]], ModelResponse]
    #: Our estimate of the request the loop would make from a history.
    measure: Callable[[Sequence[HistoryItem]], int]
    #: Below this estimate nothing is due whatever the window (the smallest trigger any real
    #: window gives), so `sizes` is not asked; 0 when the sizes are known anyway.
    floor: int = 0
    #: Called once the history reaches half of `floor`: `sizes` may soon be asked, so what
    #: gives them (the catalog's look-up) starts now and is ready by then.
    soon: Callable[[], None] = lambda: None
    #: Input tokens the provider counted for the last request, and the history length then.
    _reported: tuple[int, int] = (0, 0)
    #: Where what came after the last compaction begins in the history.
    _fresh_from: int = 0

    @functools.cached_property
    def _sizes(self) -> tuple[int, int]:
        return self.sizes()

    @property
    def window(self) -> int:
        return self._sizes[0]

    @property
    def trigger(self) -> int:
        """Compact when the next request is estimated at this many tokens or more."""
        return self._sizes[1]

    # --- when ----------------------------------------------------------------------------

    def observed(self, response: ModelResponse, history_len: int) -> None:
        """Remembers the input tokens the provider counted for the request made from the
        first `history_len` items (its answer is counted with what was added since)."""
        self._reported = (response.usage.input_tokens, history_len)

    def estimate(self, history: Sequence[HistoryItem]) -> int:
        """The larger of our estimate of the next request and the provider's last count
        plus what was added to `history` since."""
        reported, length = self._reported
        since = _tokens(history[length:]) if reported and length <= len(history) else 0
        return max(self.measure(history), reported + since if reported else 0)

    def due(self, history: Sequence[HistoryItem]) -> bool:
        """Whether to compact before the next request: it would not fit the window, or it
        is over the trigger and the turns since the last compaction are large enough that
        summarising them helps (what must be kept, a large AGENTS.md, can hold a history over the
        trigger: that must not cost a summary every turn)."""
        starts = _turn_starts(history)
        if not starts and not self.floor:
            return False  # nothing the model said yet: nothing to summarise
        estimate = self.estimate(history)
        if estimate < self.floor:  # nothing can be due yet, whatever the window
            if estimate >= self.floor // 2:
                self.soon()
            return False
        if not starts:
            return False
        if estimate >= self.window:
            return True
        if estimate < self.trigger or len(starts) < 2:
            return False
        fresh = history[self._fresh_from :]
        said = [i for i in fresh if _assistant_side(i) or isinstance(i, ToolOutput)]
        return _tokens(said) >= self.trigger // 10

    # --- how -----------------------------------------------------------------------------

    def compact(self, history: Sequence[HistoryItem], own: set[str]) -> Compaction:
        """Summarises `history` and returns the rebuilt one. `own` holds the texts of user
        messages the loop added itself (corrections, observations): not the user's words."""
        summary = self._summarise(list(history), own)
        self._reported = (0, 0)  # the provider's count was for the history being replaced
        context = self.context()
        heading = self.summary_heading.strip()
        kept_summary = truncate_middle(summary.strip(), self.trigger // 10) or "(no summary)"
        summary_text = f"{heading}\n\n{kept_summary}"
        note = Message(role="user", text=summary_text)
        skip = {m.text for m in context if isinstance(m, Message)} | own
        # The recent turns get what the rest leaves under the trigger, halved so the run has
        # room to go on, and at most a fifth of the trigger (every share here is of the
        # trigger, not the window: `model_auto_compact_token_limit` may be far below it).
        # The user's messages are counted as if the tail began at the last turn: never fewer
        # than will be kept.
        starts = _turn_starts(history)
        last = starts[-1] if starts else len(history)
        most_tasks = self._user_messages(history[:last], skip, heading)
        room = self.trigger - self.measure([*context, *most_tasks, note])
        budget = min(self.trigger // 5, max(0, room // 2))
        tail_start = self._tail_start(history, budget)
        tail = self._fit_tail(history[tail_start:], budget)
        tasks = self._user_messages(history[:tail_start], skip, heading)
        rebuilt: list[HistoryItem] = [*context, *tasks, note, *tail]
        self._fresh_from = len(rebuilt)
        return Compaction(
            history=rebuilt,
            summary=summary_text,
            before_tokens=_tokens(history),
            after_tokens=_tokens(rebuilt),
            summarised=tail_start,
        )

    def _summarise(self, history: list[HistoryItem], own: set[str]) -> str:
        """The model's summary of `history`; older turns are dropped when even the request
        for a summary is too long."""
        ask = Message(role="user", text=self.instruction)
        # The request for a summary must itself fit: older turns go first.
        while self.measure([*history, ask]) >= self.window and self._can_halve(history):
            history = self._newer_half(history, own)
        for attempt in range(1, SUMMARY_ATTEMPTS + 1):
            try:
                response = self.send([*history, ask])
            except ContextWindowExceeded:
                if attempt == SUMMARY_ATTEMPTS or not self._can_halve(history):
                    raise
                history = self._newer_half(history, own)
                continue
            return response.final_text or ""
        raise AssertionError("unreachable")

    @staticmethod
    def _can_halve(history: Sequence[HistoryItem]) -> bool:
        return len(_turn_starts(history)) >= 2

    @staticmethod
    def _newer_half(history: Sequence[HistoryItem], own: set[str]) -> list[HistoryItem]:
        """The newer half of the turns, after the older half's user messages that are not
        the loop's own (the context and the task must stay in what is summarised; a text
        harness's observations are user messages too, and go with their turns). A turn
        boundary never splits a call from its output."""
        starts = _turn_starts(history)
        cut = starts[len(starts) // 2]
        users = [
            i
            for i in history[:cut]
            if isinstance(i, Message) and i.role == "user" and i.text not in own
        ]
        return [*users, *history[cut:]]

    @staticmethod
    def _tail_start(history: Sequence[HistoryItem], budget: int) -> int:
        """Where the kept recent turns begin: the earliest turn start whose turns fit in
        `budget`, else the last turn alone."""
        starts = _turn_starts(history)
        if not starts:
            return len(history)
        for start in starts:
            if _tokens(history[start:]) <= budget:
                return start
        return starts[-1]

    @staticmethod
    def _fit_tail(tail: Sequence[HistoryItem], budget: int) -> list[HistoryItem]:
        """The kept turns, their tool results cut (head and tail kept) when together they
        would take more than `budget`."""
        if _tokens(tail) <= budget:
            return list(tail)
        outputs = [item for item in tail if isinstance(item, ToolOutput)]
        others = _tokens([item for item in tail if not isinstance(item, ToolOutput)])
        each = max(64, (budget - others) // max(1, len(outputs)))
        return [
            item.model_copy(update={"output": truncate_middle(item.output, each)})
            if isinstance(item, ToolOutput)
            else item
            for item in tail
        ]

    def _user_messages(
        self, items: Sequence[HistoryItem], skip: set[str], heading: str
    ) -> list[HistoryItem]:
        """The user's own messages, newest first until the budget is spent (the one that
        does not fit is cut), in their original order."""
        budget = min(USER_MESSAGES_MAX_TOKENS, self.trigger // 5)
        chosen: list[HistoryItem] = []
        for item in reversed(items):
            if budget <= 0:
                break
            if not isinstance(item, Message) or item.role != "user":
                continue
            if item.text in skip or item.text.startswith(heading):
                continue  # context, the loop's own words, or an earlier summary
            size = _item_tokens(item)
            if size > budget:
                item = item.model_copy(update={"text": truncate_middle(item.text, budget)})
            chosen.append(item)
            budget -= size
        chosen.reverse()
        return chosen
