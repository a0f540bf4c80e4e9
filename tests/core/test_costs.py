"""Pricing, summing and writing costs (oiexec/core/costs.py), the one way every report and
`--max-cost` compute them; and reading a task's cost back from what the task's process wrote
(untrusted)."""

from __future__ import annotations

import io
import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oiexec.agent.budget import Budget
from oiexec.core.costs import Spend, plain_usd, priced, show_usd, spent_since, sum_usd
from oiexec.core.errors import MaxCostExceeded
from oiexec.core.events import ModelPrice, TurnCompleted, Usage
from oiexec.output.human import HumanProcessor
from oiexec.runner.batch.child_reports import _usd

PRICE = ModelPrice(input_per_mtok=2, cached_input_per_mtok=0.5, output_per_mtok=10)
USAGE = Usage(
    input_tokens=1200, cached_input_tokens=300, output_tokens=500, reasoning_output_tokens=200
)


def test_cached_input_and_output_at_their_rates() -> None:
    # 900 fresh input at $2, 300 cached at $0.50, 500 output (reasoning among them) at $10.
    assert priced(PRICE, USAGE) == 0.00695
    # Without a cached rate, cached input is billed as input.
    plain = ModelPrice(input_per_mtok=2, output_per_mtok=10)
    assert priced(plain, USAGE) == 0.0074
    assert priced(None, USAGE) is None


def test_the_budget_stops_at_the_figure_the_reports_show() -> None:
    under = Budget(max_cost=0.00695, price=PRICE)
    under.charge(USAGE)  # exactly the limit: not more than it
    over = Budget(max_cost=0.00694, price=PRICE)
    with pytest.raises(MaxCostExceeded, match=r"\$0\.0069"):
        over.charge(USAGE)


def test_a_resumed_run_is_priced_on_its_own_share() -> None:
    before = Usage(input_tokens=1000, cached_input_tokens=100, output_tokens=40)
    after = before.plus(USAGE)
    assert spent_since(before, after) == USAGE
    assert priced(PRICE, spent_since(before, after)) == 0.00695


def test_sums_stay_unknown_and_free_of_float_noise() -> None:
    assert sum_usd([0.1, 0.2]) == 0.3  # not 0.30000000000000004
    assert sum_usd([0.25, None]) is None
    assert sum_usd([]) == 0.0


@pytest.mark.parametrize(
    ("value", "shown", "plain"),
    [
        (None, "unknown", "unknown"),
        (0.0, "$0.0000", "0"),
        (0.00004, "<$0.0001", "0.00004"),
        (0.00695, "$0.0069", "0.00695"),
        (12.5, "$12.50", "12.5"),
        (1234.5, "$1,234.50", "1234.5"),
    ],
)
def test_costs_as_people_and_programs_read_them(
    value: float | None, shown: str, plain: str
) -> None:
    assert show_usd(value) == shown
    assert plain_usd(value) == plain


def test_the_transcript_ends_with_the_run_and_its_session() -> None:
    fresh = Spend(USAGE, 0.00695, USAGE, 0.00695)
    assert fresh.line() == "tokens used: 1,700; cost: $0.0069"
    resumed = Spend(USAGE, 0.00695, USAGE.plus(USAGE), None)
    assert resumed.line() == (
        "tokens used: 1,700 (session: 3,400); cost: $0.0069 (session: unknown)"
    )
    stream = io.StringIO()
    human = HumanProcessor(stream, io.StringIO(), color=False, heartbeat_interval=0)
    human.emit(TurnCompleted(usage=USAGE, cost_usd=None, session_cost_usd=None))
    human.spent(Spend(USAGE, None, USAGE, None))
    assert stream.getvalue() == "tokens used: 1,700; cost: unknown\n"


def test_turn_completed_keeps_codex_fields_first_and_adds_the_costs() -> None:
    event = TurnCompleted(usage=USAGE, cost_usd=0.00695, session_cost_usd=None)
    line = json.loads(event.model_dump_json())
    assert list(line) == ["type", "usage", "cost_usd", "session_cost_usd"]
    assert line["session_cost_usd"] is None  # set by the run: unknown, said as null
    # A Codex line read back is written back as it was (no fields of ours added).
    assert list(json.loads(TurnCompleted(usage=USAGE).model_dump_json())) == ["type", "usage"]


@given(
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats()
        | st.text(max_size=20)
        | st.sampled_from(["nan", "inf", "-0", "1e400", "0.5", "unknown", " 2 "]),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
        max_leaves=5,
    )
)
def test_a_task_reported_cost_is_a_finite_amount_or_unknown(value: object) -> None:
    cost = _usd(value)
    assert cost is None or (isinstance(cost, float) and math.isfinite(cost) and 0 <= cost <= 1e12)
