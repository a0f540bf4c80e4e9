"""A readable Markdown report: verdict, gate outcome, a table of findings, then details.

With `review --baseline`, findings the baseline already has are counted but not listed
unless `show_unchanged` (`--show-unchanged`); listed, they are marked so.
"""

from __future__ import annotations

from pathlib import Path

from oiexec.output.reportfile import write_report
from oiexec.review.gate import GatePolicy, blocking_findings, is_blocking, priority_label
from oiexec.review.model import CORRECT, INCORRECT, ReviewFinding, ReviewOutput

__all__ = ["render_failure_markdown", "render_markdown", "write_markdown"]

_VERDICT = {
    CORRECT: "✅ patch is correct",
    INCORRECT: "❌ patch is incorrect",
    "": "⚠️ no verdict (the reviewer gave no structured review)",
}
_STATUS = {
    "in_diff": "in the change",
    "outside_diff": "outside the change",
    "file_missing": "file not found",
    "line_out_of_range": "lines not in file",
    "in_file": "in file",
    "unchecked": "not checked",
}


def render_markdown(
    review: ReviewOutput,
    *,
    policy: GatePolicy | None = None,
    title: str | None = None,
    show_unchanged: bool = False,
) -> str:
    policy = policy or GatePolicy()
    shown = review.shown_findings(show_unchanged)
    unchanged = sum(1 for f in review.findings if f.baseline_state == "unchanged")
    blocking = blocking_findings(review, policy)
    lines = [f"# Code review{f': {title}' if title else ''}", ""]
    lines.append(
        f"**Verdict:** {_VERDICT[review.overall_correctness]} "
        f"(confidence {review.overall_confidence_score:.2f})  "
    )
    threshold = f"P{policy.fail_on}"
    if blocking:
        gate = f"❌ blocked: {len(blocking)} finding(s) at or above {threshold}"
    else:
        gate = f"✅ passed: no finding at or above {threshold}"
    if policy.min_confidence:
        gate += f" with confidence ≥ {policy.min_confidence:.2f}"
    lines += [f"**Gate:** {gate}", ""]
    if any(f.baseline_state is not None for f in review.findings):
        listed = "listed below" if show_unchanged else "not listed (`--show-unchanged` lists them)"
        known = "none in the baseline"
        if unchanged:
            known = f"{unchanged} already in the baseline, {listed}"
        lines += [f"**Baseline:** {len(review.findings) - unchanged} new finding(s); {known}", ""]
    if review.overall_explanation.strip():
        lines += [review.overall_explanation.strip(), ""]
    if not shown:
        lines.append("No new findings." if review.findings else "No findings.")
        return "\n".join(lines) + "\n"
    lines += [
        "| # | Priority | Finding | Location | Confidence | Blocks |",
        "|---|---|---|---|---|---|",
    ]
    for number, finding in enumerate(shown, 1):
        lines.append(
            f"| {number} | {priority_label(finding)} | {_cell(finding.title)} "
            f"| {_cell(_location(finding))} | {finding.confidence_score:.2f} "
            f"| {_blocks(finding, policy)} |"
        )
    lines += ["", "## Details", ""]
    for number, finding in enumerate(shown, 1):
        lines += [
            f"### {number}. {finding.title}",
            "",
            f"`{_location(finding)}` · {priority_label(finding)} · confidence "
            f"{finding.confidence_score:.2f} · {_STATUS[finding.location_status]}"
            + (" · in the baseline" if finding.baseline_state == "unchanged" else "")
            + (" · **blocking**" if is_blocking(finding, policy) else ""),
            "",
            finding.body.strip(),
            "",
        ]
    return "\n".join(lines).rstrip("\n") + "\n"


def render_failure_markdown(message: str, exit_code: int) -> str:
    """The report of a review that produced no review: what went wrong, and no verdict."""
    return (
        "# Code review\n\n"
        f"**Verdict:** ⚠️ no review: the review did not complete (exit code {exit_code})  \n"
        "**Gate:** ❌ failed\n\n"
        f"{message.strip()}\n"
    )


def write_markdown(
    path: Path, review: ReviewOutput, *, policy: GatePolicy | None = None, title: str | None = None
) -> None:
    write_report(path, render_markdown(review, policy=policy, title=title), "--markdown")


def _blocks(finding: ReviewFinding, policy: GatePolicy) -> str:
    if finding.baseline_state == "unchanged":
        return "no (in the baseline)"
    return "yes" if is_blocking(finding, policy) else "no"


def _location(finding: ReviewFinding) -> str:
    span = finding.code_location.line_range
    return f"{finding.display_path}:{span.start}-{span.end}"


def _cell(text: str) -> str:
    # A table cell ends at a pipe or a newline.
    return " ".join(text.replace("|", "\\|").split())
