"""Code review: the structured result, its parsing, location checks, the gate and reports.

Pure building blocks for `interpreter exec review`; the agent loop that produces the answer
lives elsewhere. Typical flow::

    resolved = resolve_target(repo, UncommittedTarget())
    # ... run the agent with review_instructions(...) and resolved.user_message ...
    review = parse_review(answer)          # or correction_message(err) once, then fallback_review
    changed = changed_lines(repo, resolved.target)
    review = locate_findings(review, resolved.repo_root, changed, revision=resolved.revision)
    exit_code = gate_exit_code(review, GatePolicy(fail_on=1, min_confidence=0.0))
"""

from __future__ import annotations

from oiexec.review.gate import (
    GatePolicy,
    blocking_findings,
    gate_exit_code,
    is_blocking,
    parse_fail_on,
    parse_min_confidence,
)
from oiexec.review.locate import locate_findings
from oiexec.review.model import (
    CodeLocation,
    LineRange,
    LocationStatus,
    ReviewFinding,
    ReviewOutput,
    review_output_json_schema,
)
from oiexec.review.parse import ReviewParseError, correction_message, fallback_review, parse_review
from oiexec.review.prompt import REVIEW_RUBRIC, review_instructions
from oiexec.review.targets import (
    BaseBranchTarget,
    CommitTarget,
    CustomTarget,
    ResolvedTarget,
    ReviewTarget,
    ReviewTargetError,
    UncommittedTarget,
    changed_lines,
    resolve_target,
)

__all__ = [
    "REVIEW_RUBRIC",
    "BaseBranchTarget",
    "CodeLocation",
    "CommitTarget",
    "CustomTarget",
    "GatePolicy",
    "LineRange",
    "LocationStatus",
    "ResolvedTarget",
    "ReviewFinding",
    "ReviewOutput",
    "ReviewParseError",
    "ReviewTarget",
    "ReviewTargetError",
    "UncommittedTarget",
    "blocking_findings",
    "changed_lines",
    "correction_message",
    "fallback_review",
    "gate_exit_code",
    "is_blocking",
    "locate_findings",
    "parse_fail_on",
    "parse_min_confidence",
    "parse_review",
    "resolve_target",
    "review_instructions",
    "review_output_json_schema",
]
