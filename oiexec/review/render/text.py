"""The review as the single `agent_message` text Codex emits at the end of a review."""

from __future__ import annotations

from oiexec.review.model import ReviewFinding, ReviewOutput

__all__ = ["NO_RESPONSE_TEXT", "render_finding_line", "render_review_text"]

#: What Codex shows when a review has neither an explanation nor findings.
NO_RESPONSE_TEXT = "Reviewer failed to output a response."


def render_finding_line(finding: ReviewFinding) -> str:
    span = finding.code_location.line_range
    path = finding.code_location.absolute_file_path
    return f"- {finding.title} — {path}:{span.start}-{span.end}"


def render_review_text(review: ReviewOutput) -> str:
    """`<explanation>\\n\\nReview comment:\\n\\n- <title> — <path>:<start>-<end>\\n  <body>`."""
    sections: list[str] = []
    explanation = review.overall_explanation.strip()
    if explanation:
        sections.append(explanation)
    if review.findings:
        header = "Full review comments:" if len(review.findings) > 1 else "Review comment:"
        lines = [header]
        for finding in review.findings:
            lines.append("")
            lines.append(render_finding_line(finding))
            lines.extend(f"  {line}" for line in finding.body.splitlines())
        sections.append("\n".join(lines))
    return "\n\n".join(sections) if sections else NO_RESPONSE_TEXT
