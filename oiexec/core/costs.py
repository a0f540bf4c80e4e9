"""What a run cost, in USD: the figures every report shows (turn.completed, the transcript,
JUnit, the step summary, the Python API, sessions, batch), computed, summed and written one way.

A cost is priced by `ModelPrice.cost` (core/events), the function `--max-cost` enforces with,
so a report and the budget never disagree. None means unknown (no price for the model): it
stays unknown when added to, because a total that leaves out what it cannot price would read
as the whole bill.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from oiexec.core.events import ModelPrice, Usage

__all__ = ["Spend", "exact_usd", "plain_usd", "priced", "show_usd", "spent_since", "sum_usd"]

#: Costs are kept to a billionth of a dollar: far below any provider's billing unit, and it
#: keeps float noise (0.006950000000000001) out of the JSON a pipeline compares.
_DIGITS = 9


def exact_usd(value: float) -> float:
    return round(value, _DIGITS)


def spent_since(start: Usage, end: Usage) -> Usage:
    """`end` minus `start`: this invocation's share of a thread's cumulative usage."""
    return Usage(
        **{name: max(0, getattr(end, name) - getattr(start, name)) for name in Usage.model_fields}
    )


def priced(price: ModelPrice | None, usage: Usage) -> float | None:
    """`usage` at `price`, None when the price is unknown."""
    return None if price is None else exact_usd(price.cost(usage))


def sum_usd(costs: Iterable[float | None]) -> float | None:
    """The total, unknown when any part is."""
    total = 0.0
    for cost in costs:
        if cost is None:
            return None
        total += cost
    return exact_usd(total)


def plain_usd(value: float | None) -> str:
    """A cost for a report a program reads (a JUnit property): a plain decimal, `unknown`."""
    if value is None:
        return "unknown"
    return f"{value:.{_DIGITS}f}".rstrip("0").rstrip(".")


def show_usd(value: float | None) -> str:
    """A cost for people: `$1.23`, `$0.0070`, `<$0.0001`, or `unknown`."""
    if value is None:
        return "unknown"
    if value >= 1:
        return f"${value:,.2f}"
    if 0 < value < 0.0001:
        return "<$0.0001"
    return f"${value:.4f}"


@dataclass(frozen=True)
class Spend:
    """What one run spent, and what its session has in all (equal for a new thread)."""

    usage: Usage
    cost_usd: float | None
    session_usage: Usage
    session_cost_usd: float | None

    def line(self) -> str:
        """The transcript's closing line: `tokens used: 1,700; cost: $0.0070`, with the
        session's totals beside a resumed run's own."""
        tokens = f"{_tokens(self.usage):,}"
        cost = show_usd(self.cost_usd)
        if self.session_usage != self.usage:
            tokens += f" (session: {_tokens(self.session_usage):,})"
            cost += f" (session: {show_usd(self.session_cost_usd)})"
        return f"tokens used: {tokens}; cost: {cost}"


def _tokens(usage: Usage) -> int:
    return usage.input_tokens + usage.output_tokens
