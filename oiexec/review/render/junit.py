"""JUnit XML: one test case per finding, failing when the gate says it blocks."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from oiexec.output.reportfile import write_report
from oiexec.review.gate import GatePolicy, is_blocking, priority_label
from oiexec.review.model import ReviewFinding, ReviewOutput

__all__ = ["render_junit", "write_junit"]

_SUITE = "oiexec review"
#: Characters XML 1.0 cannot carry even escaped; a model's text may contain them.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def render_junit(review: ReviewOutput, *, policy: GatePolicy | None = None) -> str:
    """The report as an XML string with a single `<testsuite>` inside `<testsuites>`."""
    policy = policy or GatePolicy()
    suite = ET.Element("testsuite", name=_SUITE)
    properties = ET.SubElement(suite, "properties")
    for name, value in (
        ("overall_correctness", review.overall_correctness),
        ("overall_confidence_score", str(review.overall_confidence_score)),
        ("fail_on", f"P{policy.fail_on}"),
        ("min_confidence", str(policy.min_confidence)),
    ):
        ET.SubElement(properties, "property", name=name, value=value)
    failures = errors = 0
    if review.is_fallback:
        case = ET.SubElement(suite, "testcase", classname="oiexec.review", name="review result")
        error = ET.SubElement(case, "error", message="the reviewer gave no structured review")
        error.text = review.overall_explanation
        errors = 1
    elif not review.findings:
        ET.SubElement(suite, "testcase", classname="oiexec.review", name="no findings")
    for finding in review.findings:
        failures += _add_case(suite, finding, is_blocking(finding, policy))
    root = ET.Element("testsuites", name=_SUITE)
    root.append(suite)
    counts = {"tests": max(len(review.findings), 1), "failures": failures, "errors": errors}
    for node in (root, suite):
        for name, count in counts.items():
            node.set(name, str(count))
    _sanitise(root)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(path: Path, review: ReviewOutput, *, policy: GatePolicy | None = None) -> None:
    write_report(path, render_junit(review, policy=policy))


def _add_case(suite: ET.Element, finding: ReviewFinding, blocking: bool) -> int:
    span = finding.code_location.line_range
    location = f"{finding.display_path}:{span.start}-{span.end}"
    priority = priority_label(finding)
    case = ET.SubElement(
        suite,
        "testcase",
        classname=f"oiexec.review.{priority}",
        name=f"{finding.title} ({location})",
        file=finding.display_path,
        line=str(span.start),
    )
    details = (
        f"priority: {priority}\n"
        f"confidence: {finding.confidence_score:.2f}\n"
        f"location: {location} ({finding.location_status.replace('_', ' ')})\n\n"
        f"{finding.body}"
    )
    if blocking:
        failure = ET.SubElement(case, "failure", message=finding.title, type=priority)
        failure.text = details
        return 1
    ET.SubElement(case, "system-out").text = details
    return 0


def _sanitise(root: ET.Element) -> None:
    for node in root.iter():
        if node.text:
            node.text = _NOT_XML.sub("\ufffd", node.text)
        for key, value in node.attrib.items():
            node.set(key, _NOT_XML.sub("\ufffd", value))
