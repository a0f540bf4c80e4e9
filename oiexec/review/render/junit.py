"""JUnit XML: one test case per finding, failing when the gate says it blocks.

With `review --baseline`, only new findings get a case unless `show_unchanged`; the counts
go into the suite's properties either way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from junit_xml import TestCase, TestSuite

from oiexec.output.junit_text import junit_text
from oiexec.output.reportfile import write_report
from oiexec.review.gate import GatePolicy, is_blocking, priority_label
from oiexec.review.model import ReviewFinding, ReviewOutput

__all__ = ["render_failure_junit", "render_junit", "write_junit"]

_SUITE = "oiexec review"
#: Characters XML 1.0 cannot carry even escaped; a model's text may contain them. Replaced
#: (not dropped, as junit-xml would) so the reader sees that something was there.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def render_junit(
    review: ReviewOutput,
    *,
    policy: GatePolicy | None = None,
    properties: Mapping[str, str] | None = None,
    show_unchanged: bool = False,
) -> str:
    """The report as an XML string with a single `<testsuite>` inside `<testsuites>`;
    `properties` (the run's tokens and cost) join the review's own."""
    policy = policy or GatePolicy()
    shown = review.shown_findings(show_unchanged)
    cases = [_case(finding, is_blocking(finding, policy)) for finding in shown]
    if review.is_fallback:
        case = TestCase("review result", classname="oiexec.review")
        case.add_error_info(
            message="the reviewer gave no structured review",
            output=_clean(review.overall_explanation),
        )
        cases.append(case)
    elif not cases:
        name = "no new findings" if review.findings else "no findings"
        cases.append(TestCase(name, classname="oiexec.review"))
    states = [f.baseline_state for f in review.findings]
    baseline = {}
    if any(state is not None for state in states):
        baseline = {
            "baseline_new": str(states.count("new")),
            "baseline_unchanged": str(states.count("unchanged")),
        }
    properties = {
        "overall_correctness": review.overall_correctness,
        "overall_confidence_score": str(review.overall_confidence_score),
        "fail_on": f"P{policy.fail_on}",
        "min_confidence": str(policy.min_confidence),
        **baseline,
        **(properties or {}),
    }
    suite = TestSuite(_SUITE, cases, properties={k: _clean(v) for k, v in properties.items()})
    return junit_text([suite])


def render_failure_junit(message: str, exit_code: int) -> str:
    """The report of a review that produced no review (it failed, or never started): one
    failing case with the error and the exit code, so the publisher shows why."""
    case = TestCase("review", classname="oiexec.review")
    text = _clean(f"{message} (exit code {exit_code})")
    case.add_failure_info(message=text, output=text, failure_type="review_failed")
    suite = TestSuite(_SUITE, [case], properties={"exit_code": str(exit_code)})
    return junit_text([suite])


def write_junit(path: Path, review: ReviewOutput, *, policy: GatePolicy | None = None) -> None:
    write_report(path, render_junit(review, policy=policy), "--junit")


def _case(finding: ReviewFinding, blocking: bool) -> TestCase:
    span = finding.code_location.line_range
    location = f"{finding.display_path}:{span.start}-{span.end}"
    priority = priority_label(finding)
    baseline = "baseline: unchanged\n" if finding.baseline_state == "unchanged" else ""
    details = _clean(
        f"priority: {priority}\n"
        f"confidence: {finding.confidence_score:.2f}\n"
        f"location: {location} ({finding.location_status.replace('_', ' ')})\n"
        f"{baseline}\n"
        f"{finding.body}"
    )
    case = TestCase(
        _clean(f"{finding.title} ({location})"),
        classname=f"oiexec.review.{priority}",
        file=_clean(finding.display_path),
        line=str(span.start),
        stdout=None if blocking else details,
    )
    if blocking:
        case.add_failure_info(message=_clean(finding.title), output=details, failure_type=priority)
    return case


def _clean(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)
