from __future__ import annotations

import pytest

from oiexec.core.errors import ExitCode, UsageError
from oiexec.review.gate import (
    GatePolicy,
    blocking_findings,
    parse_fail_on,
    parse_min_confidence,
)
from tests.review.conftest import finding, review

ONE_OF_EACH = review(
    finding(priority=0, title="p0"),
    finding(priority=1, title="p1"),
    finding(priority=2, title="p2"),
    finding(priority=3, title="p3"),
    finding(priority=None, title="none"),
)


@pytest.mark.parametrize(
    ("fail_on", "blocked"),
    [
        (0, ["p0"]),
        (1, ["p0", "p1"]),
        (2, ["p0", "p1", "p2"]),
        (3, ["p0", "p1", "p2", "p3", "none"]),
    ],
)
def test_threshold_blocks_at_or_above(fail_on: int, blocked: list[str]) -> None:
    titles = [f.title for f in blocking_findings(ONE_OF_EACH, GatePolicy(fail_on=fail_on))]
    assert titles == blocked


def test_default_is_p1() -> None:
    assert [f.title for f in blocking_findings(ONE_OF_EACH, GatePolicy())] == ["p0", "p1"]


def test_min_confidence_unblocks_unsure_findings() -> None:
    result = review(finding(priority=0, confidence=0.49), finding(priority=1, confidence=0.5))
    assert [
        f.confidence_score for f in blocking_findings(result, GatePolicy(min_confidence=0.5))
    ] == [0.5]


def test_blocked_exit_code_is_7() -> None:
    assert int(ExitCode.REVIEW_BLOCKED) == 7


def test_outside_diff_can_be_excluded() -> None:
    result = review(
        finding(priority=0, title="inside", location_status="in_diff"),
        finding(priority=0, title="outside", location_status="outside_diff"),
        finding(priority=0, title="missing", location_status="file_missing"),
    )
    assert len(blocking_findings(result, GatePolicy())) == 3
    strict = GatePolicy(block_outside_diff=False)
    assert [f.title for f in blocking_findings(result, strict)] == ["inside"]


@pytest.mark.parametrize(("text", "number"), [("P0", 0), ("p2", 2), ("3", 3), (" P1 ", 1)])
def test_parse_fail_on(text: str, number: int) -> None:
    assert parse_fail_on(text) == number


@pytest.mark.parametrize("text", ["P4", "high", "", "P-1", "PP1"])
def test_parse_fail_on_rejects(text: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_fail_on(text)
    assert info.value.exit_code == ExitCode.USAGE


def test_parse_min_confidence() -> None:
    assert parse_min_confidence("0.7") == 0.7
    for bad in ("1.5", "-0.1", "abc", "nan"):
        with pytest.raises(UsageError):
            parse_min_confidence(bad)


def test_policy_rejects_bad_values() -> None:
    with pytest.raises(UsageError):
        GatePolicy(fail_on=4)
    with pytest.raises(UsageError):
        GatePolicy(min_confidence=2.0)
