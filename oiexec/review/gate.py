"""The merge gate: which findings block, given `--fail-on` and `--min-confidence`.

A finding blocks when its priority number is at or below the threshold (P0 is the most
severe, so `--fail-on P1` blocks on P0 and P1) and its confidence is at least the minimum.
A finding without a priority counts as P3: the model did not say it matters, so it blocks
only a gate that asked for everything (`--fail-on P3`). A finding the baseline already has
(`review --baseline`) never blocks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from oiexec.core.errors import UsageError
from oiexec.review.model import ReviewFinding, ReviewOutput

__all__ = [
    "DEFAULT_FAIL_ON",
    "UNPRIORITISED",
    "GatePolicy",
    "blocking_findings",
    "effective_priority",
    "is_blocking",
    "parse_fail_on",
    "parse_min_confidence",
    "priority_label",
]

DEFAULT_FAIL_ON = 1
#: The priority a finding without one is treated as.
UNPRIORITISED = 3
_FAIL_ON = re.compile(r"^[Pp]?([0-3])$")


@dataclass(frozen=True)
class GatePolicy:
    fail_on: int = DEFAULT_FAIL_ON
    min_confidence: float = 0.0
    #: False lets findings that point outside the change (or at nothing) never block.
    block_outside_diff: bool = True

    def __post_init__(self) -> None:
        if not 0 <= self.fail_on <= 3:
            raise UsageError(f"--fail-on must be P0, P1, P2 or P3, got {self.fail_on}")
        if not 0.0 <= self.min_confidence <= 1.0:
            raise UsageError(f"--min-confidence must be from 0 to 1, got {self.min_confidence}")


def parse_fail_on(value: str) -> int:
    """`"P1"`, `"p1"` or `"1"` → 1; anything else is a `UsageError`."""
    match = _FAIL_ON.match(value.strip())
    if not match:
        raise UsageError(f"--fail-on must be P0, P1, P2 or P3, got {value!r}")
    return int(match.group(1))


def parse_min_confidence(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not 0.0 <= number <= 1.0:
        raise UsageError(f"--min-confidence must be a number from 0 to 1, got {value!r}")
    return number


def effective_priority(finding: ReviewFinding) -> int:
    return UNPRIORITISED if finding.priority is None else finding.priority


def priority_label(finding: ReviewFinding) -> str:
    return f"P{effective_priority(finding)}"


def is_blocking(finding: ReviewFinding, policy: GatePolicy) -> bool:
    if finding.baseline_state == "unchanged":
        return False  # already there before (review --baseline): only new findings block
    if effective_priority(finding) > policy.fail_on:
        return False
    if finding.confidence_score < policy.min_confidence:
        return False
    return policy.block_outside_diff or finding.location_status in {"in_diff", "in_file"}


def blocking_findings(review: ReviewOutput, policy: GatePolicy) -> list[ReviewFinding]:
    return [f for f in review.findings if is_blocking(f, policy)]
