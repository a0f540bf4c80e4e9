"""SARIF 2.1.0 for GitHub code scanning: one rule per priority, one result per finding."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from oiexec.core.version import __version__
from oiexec.output.reportfile import write_report
from oiexec.review.gate import GatePolicy, effective_priority, is_blocking
from oiexec.review.model import ReviewFinding, ReviewOutput

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
) -> dict[str, Any]:
    """The SARIF log as a JSON-ready dict (run `locate_findings` first for relative URIs)."""
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
        "results": [_result(f, repo_root, policy) for f in review.findings],
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
) -> None:
    write_report(path, sarif_text(review, repo_root=repo_root, policy=policy), "--sarif")


def sarif_text(
    review: ReviewOutput, *, repo_root: Path | None = None, policy: GatePolicy | None = None
) -> str:
    """The SARIF log as the file holds it."""
    log = render_sarif(review, repo_root=repo_root, policy=policy)
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def _rule(priority: int) -> dict[str, Any]:
    return {
        "id": _rule_id(priority),
        "name": f"ReviewFindingP{priority}",
        "shortDescription": {"text": f"P{priority} review finding"},
        "fullDescription": {"text": _RULE_TEXT[priority]},
        "defaultConfiguration": {"level": _LEVELS[priority]},
        "properties": {
            "tags": ["code-review"],
            "problem.severity": _PROBLEM_SEVERITY[priority],
        },
    }


def _rule_id(priority: int) -> str:
    return f"oiexec-review/P{priority}"


def _result(finding: ReviewFinding, root: Path | None, policy: GatePolicy) -> dict[str, Any]:
    priority = effective_priority(finding)
    span = finding.code_location.line_range
    artifact: dict[str, Any] = {"uri": _uri(finding, root)}
    if finding.relative_path is not None and root is not None:
        artifact["uriBaseId"] = _SRCROOT
    text = finding.title if not finding.body else f"{finding.title}\n\n{finding.body}"
    return {
        "ruleId": _rule_id(priority),
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
        "partialFingerprints": {"oiexecReviewFinding/v1": _fingerprint(finding)},
        "properties": {
            "priority": finding.priority,
            "confidence": finding.confidence_score,
            "locationStatus": finding.location_status,
            "blocking": is_blocking(finding, policy),
        },
    }


def _uri(finding: ReviewFinding, root: Path | None) -> str:
    if finding.relative_path is not None:
        return quote(finding.relative_path)
    raw = PurePosixPath(finding.code_location.absolute_file_path.replace("\\", "/"))
    if root is not None and raw.is_absolute():
        try:
            raw = raw.relative_to(root.resolve().as_posix())
        except ValueError:
            return Path(raw).as_uri()
    return quote(raw.as_posix())


def _fingerprint(finding: ReviewFinding) -> str:
    # Stable across line shifts and re-wordings of the body, so code scanning can track a
    # finding from one run to the next.
    key = f"{finding.display_path}\0{finding.title.strip().lower()}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()
