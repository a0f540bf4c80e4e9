"""The model's window is looked up only when compaction could be due: a short run never asks
the catalog, a growing one starts the look-up at half the smallest real window's trigger and
waits for it only at that trigger."""

from __future__ import annotations

from collections.abc import Sequence

from oiexec.agent.compact import SMALLEST_WINDOW, Compactor, floor_before_lookup
from oiexec.core.types import HistoryItem, Message, ModelResponse


class _Window:
    def __init__(self) -> None:
        self.asked = 0
        self.started = 0

    def sizes(self) -> tuple[int, int]:
        self.asked += 1
        return 10_000, 9_000

    def soon(self) -> None:
        self.started += 1


def _compactor(window: _Window, size: list[int], trigger: int | None = None) -> Compactor:
    def send(_items: Sequence[HistoryItem]) -> ModelResponse:
        raise AssertionError("no summary is asked for here")

    return Compactor(
        sizes=window.sizes,
        instruction="summarise",
        summary_heading="summary",
        context=list,
        send=send,
        measure=lambda _items: size[0],
        floor=floor_before_lookup(trigger),
        soon=window.soon,
    )


HISTORY: list[HistoryItem] = [
    Message(role="user", text="task"),
    Message(role="assistant", text="working"),
    Message(role="user", text="more"),
    Message(role="assistant", text="still working"),
]


def test_a_short_history_never_asks_for_the_window() -> None:
    window = _Window()
    size = [1_000]
    compactor = _compactor(window, size)
    for _ in range(50):
        assert not compactor.due(HISTORY)
    assert (window.asked, window.started) == (0, 0)


def test_the_look_up_starts_at_half_the_floor_and_is_waited_for_at_the_floor() -> None:
    window = _Window()
    floor = floor_before_lookup(None)
    assert floor == int(SMALLEST_WINDOW * 0.9)
    size = [floor // 2]
    compactor = _compactor(window, size)
    assert not compactor.due(HISTORY)
    assert (window.asked, window.started) == (0, 1)  # started, not waited for
    size[0] = floor
    compactor.due(HISTORY)
    assert window.asked == 1
    size[0] = 10_500  # over the looked-up window (10 000): due
    assert compactor.due(HISTORY)
    assert window.asked == 1  # asked once per run


def test_a_configured_trigger_below_the_floor_lowers_it() -> None:
    assert floor_before_lookup(2_000) == 2_000
    window = _Window()
    size = [2_100]
    _compactor(window, size, trigger=2_000).due(HISTORY)
    assert window.asked == 1
