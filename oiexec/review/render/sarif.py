"""SARIF 2.1.0 for GitHub code scanning: one rule per priority, one result per finding.

With `review --baseline`, each result carries `baselineState` (`new` or `unchanged`) and the
baseline's results no finding matched follow as `absent` ones, which code scanning reads.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from oiexec.core.version import __version__
from oiexec.output.reportfile import write_report
from oiexec.review.gate import GatePolicy, effective_priority, is_blocking
from oiexec.review.identity import (
    FINGERPRINT_KEY,
    LEGACY_FINGERPRINT_KEY,
    artifact_uri,
    finding_fingerprint,
    legacy_fingerprint,
    message_text,
    rule_id,
)
from oiexec.review.model import ReviewFinding, ReviewOutput

if TYPE_CHECKING:
    from oiexec.review.baseline import BaselineResult

__all__ = [
    "SARIF_SCHEMA_URI",
    "render_failure_sarif",
    "render_sarif",
    "sarif_text",
    "write_sarif",
]

SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
_SRCROOT = "SRCROOT"
_LEVELS = {0: "error", 1: "error", 2: "warning", 3: "note"}
#: GitHub's own severity vocabulary for rules (`problem.severity`).
_PROBLEM_SEVERITY = {0: "error", 1: "error", 2: "warning", 3: "recommendation"}
_RULE_TEXT = {
    0: "Must not merge: data loss, a security hole, or the main path broken.",
    1: "Should be fixed before merging: a real bug users will hit.",
    2: "Should be fixed soon: a bug in a less common path or a robustness gap.",
    3: "Minor: low impact or unlikely to be hit.",
}


def render_sarif(
    review: ReviewOutput,
    *,
    repo_root: Path | None = None,
    policy: GatePolicy | None = None,
    absent: Sequence[BaselineResult] = (),
) -> dict[str, Any]:
    """The SARIF log as a JSON-ready dict (run `locate_findings` first for relative URIs);
    `absent`: the baseline's results that no finding matched (`baseline.compare`)."""
    policy = policy or GatePolicy()
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "oiexec",
                "version": __version__,
                "semanticVersion": __version__,
                "rules": [_rule(p) for p in range(4)],
            }
        },
        "results": [
            *(_result(f, repo_root, policy) for f in review.findings),
            *(_absent(r) for r in absent),
        ],
        "columnKind": "unicodeCodePoints",
        "properties": {
            "overallCorrectness": review.overall_correctness,
            "overallExplanation": review.overall_explanation,
            "overallConfidenceScore": review.overall_confidence_score,
            "failOn": f"P{policy.fail_on}",
            "minConfidence": policy.min_confidence,
        },
    }
    if repo_root is not None:
        run["originalUriBaseIds"] = {_SRCROOT: {"uri": repo_root.resolve().as_uri() + "/"}}
    return {"$schema": SARIF_SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def render_failure_sarif(message: str, exit_code: int) -> str:
    """A valid log for a review that did not happen: no results, and an invocation marked
    unsuccessful with the error. Code scanning records a failed analysis rather than reading
    "no results" as "every earlier alert is fixed"."""
    run = {
        "tool": {"driver": {"name": "oiexec", "version": __version__, "rules": []}},
        "invocations": [
            {
                "executionSuccessful": False,
                "exitCode": exit_code,
                "toolExecutionNotifications": [{"level": "error", "message": {"text": message}}],
            }
        ],
        "results": [],
    }
    log = {"$schema": SARIF_SCHEMA_URI, "version": "2.1.0", "runs": [run]}
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def write_sarif(
    path: Path,
    review: ReviewOutput,
    *,
    repo_root: Path | None = None,
    policy: GatePolicy | None = None,
    absent: Sequence[BaselineResult] = (),
) -> None:
    text = sarif_text(review, repo_root=repo_root, policy=policy, absent=absent)
    write_report(path, text, "--sarif")


def sarif_text(
    review: ReviewOutput,
    *,
    repo_root: Path | None = None,
    policy: GatePolicy | None = None,
    absent: Sequence[BaselineResult] = (),
) -> str:
    """The SARIF log as the file holds it."""
    log = render_sarif(review, repo_root=repo_root, policy=policy, absent=absent)
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def _rule(priority: int) -> dict[str, Any]:
    return {
        "id": rule_id(priority),
        "name": f"ReviewFindingP{priority}",
        "shortDescription": {"text": f"P{priority} review finding"},
        "fullDescription": {"text": _RULE_TEXT[priority]},
        "defaultConfiguration": {"level": _LEVELS[priority]},
        "properties": {
            "tags": ["code-review"],
            "problem.severity": _PROBLEM_SEVERITY[priority],
        },
    }


def _result(finding: ReviewFinding, root: Path | None, policy: GatePolicy) -> dict[str, Any]:
    priority = effective_priority(finding)
    span = finding.code_location.line_range
    artifact: dict[str, Any] = {"uri": artifact_uri(finding, root)}
    if finding.relative_path is not None and root is not None:
        artifact["uriBaseId"] = _SRCROOT
    text = message_text(finding)
    result: dict[str, Any] = {
        "ruleId": rule_id(priority),
        "ruleIndex": priority,
        "level": _LEVELS[priority],
        "message": {"text": text, "markdown": text},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": artifact,
                    "region": {"startLine": span.start, "endLine": span.end},
                }
            }
        ],
        # Always written, baseline or not: today's report is tomorrow's --baseline.
        "partialFingerprints": {
            FINGERPRINT_KEY: finding_fingerprint(finding),
            LEGACY_FINGERPRINT_KEY: legacy_fingerprint(finding),
        },
        "properties": {
            "priority": finding.priority,
            "confidence": finding.confidence_score,
            "locationStatus": finding.location_status,
            "blocking": is_blocking(finding, policy),
        },
    }
    if finding.baseline_state is not None:
        result["baselineState"] = finding.baseline_state
    return result


def _absent(old: BaselineResult) -> dict[str, Any]:
    """A baseline result this review no longer reports, rebuilt from the checked fields only
    (the baseline is untrusted: nothing of it is copied through unread)."""
    result: dict[str, Any] = {
        "ruleId": old.rule_id,
        "message": {"text": old.message or "(no message in the baseline)"},
        "baselineState": "absent",
    }
    for priority in range(4):
        if old.rule_id == rule_id(priority):
            result["ruleIndex"] = priority
    if old.level is not None:
        result["level"] = old.level
    if old.uri:
        # Encoded again as our own URIs are (quote for paths, file: URIs keep their colon).
        artifact: dict[str, Any] = {"uri": quote(old.uri, safe="/:")}
        if old.uri_base_id is not None:
            artifact["uriBaseId"] = old.uri_base_id
        location: dict[str, Any] = {"artifactLocation": artifact}
        if old.start_line is not None:
            location["region"] = {"startLine": old.start_line}
            if old.end_line is not None:
                location["region"]["endLine"] = old.end_line
        result["locations"] = [{"physicalLocation": location}]
    if old.fingerprints:
        result["partialFingerprints"] = dict(old.fingerprints)
    return result
