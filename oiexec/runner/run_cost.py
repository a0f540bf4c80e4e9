"""What one run cost, priced when it ends (runner/exec): this invocation's share of the
thread's usage at the model's price, and the session's running total.

The price comes from `PendingFacts`, whose catalog look-up began with the run and is waited
for here at most `PRICE_WAIT_S` (none for an interrupted run): a report must never hold up or
fail the end of a run. A run that used no tokens cost nothing, whatever the price.
"""

from __future__ import annotations

from collections.abc import Callable

from oiexec.catalog.facts import PendingFacts
from oiexec.core.costs import Spend, priced, spent_since, sum_usd
from oiexec.core.events import Usage

__all__ = ["PRICE_WAIT_S", "price_run"]

#: How long the end of a run waits for the model catalog's price (a cold look-up takes well
#: under a second, and it began with the run). Past it the cost is unknown.
PRICE_WAIT_S = 5.0


def price_run(
    facts: PendingFacts,
    start: Usage,
    end: Usage,
    session_cost: float | None,
    *,
    wait_s: float,
    note: Callable[[str], None],
) -> Spend:
    """The run from `start` to `end` (the thread's usage before and after it) priced, and
    the session's total (`session_cost` before it); `note` is told, once, why a cost that
    tokens were spent on is unknown."""
    spent = spent_since(start, end)
    cost: float | None = 0.0
    if spent != Usage():
        price, unknown = facts.price_within(wait_s)
        cost = priced(price, spent)
        if unknown is not None:
            note(f"cost unknown: {unknown}; set it with [model_pricing] in config")
    return Spend(
        usage=spent,
        cost_usd=cost,
        session_usage=end,
        session_cost_usd=sum_usd([session_cost, cost]),
    )
