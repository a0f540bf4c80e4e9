"""GitHub Actions: a step summary and `::error`/`::warning` annotations on the changed lines.

Annotations are workflow commands, which the runner reads from the step's stdout and stderr;
stdout belongs to the JSONL stream, so write them to stderr. The escaping and the step summary
file are exec's too: output/ci.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TextIO

from oiexec.output.ci import (
    escape_data,
    escape_property,
    step_summary_target,
    workflow_command,
)
from oiexec.review.gate import GatePolicy, is_blocking, priority_label
from oiexec.review.model import ReviewFinding, ReviewOutput

__all__ = [
    "annotation",
    "escape_data",
    "escape_property",
    "github_annotations",
    "step_summary_target",
    "write_annotations",
    "write_step_summary",
]


def annotation(finding: ReviewFinding, policy: GatePolicy) -> str:
    """`::error file=..,line=..,endLine=..,title=..::message` (warning when not blocking)."""
    command = "error" if is_blocking(finding, policy) else "warning"
    props: list[tuple[str, str]] = []
    if finding.relative_path is not None and finding.location_status != "file_missing":
        span = finding.code_location.line_range
        props += [
            ("file", finding.relative_path),
            ("line", str(span.start)),
            ("endLine", str(span.end)),
        ]
    props.append(("title", f"{priority_label(finding)} {_untagged(finding.title)}"))
    return workflow_command(command, finding.body.strip() or finding.title, **dict(props))


def github_annotations(
    review: ReviewOutput, policy: GatePolicy | None = None, *, show_unchanged: bool = False
) -> list[str]:
    """One per finding; findings already in the baseline only with `show_unchanged`."""
    policy = policy or GatePolicy()
    return [annotation(f, policy) for f in review.shown_findings(show_unchanged)]


def write_annotations(
    stream: TextIO,
    review: ReviewOutput,
    policy: GatePolicy | None = None,
    *,
    show_unchanged: bool = False,
) -> None:
    for line in github_annotations(review, policy, show_unchanged=show_unchanged):
        stream.write(line + "\n")
    stream.flush()


def write_step_summary(markdown: str, env: Mapping[str, str] | None = None) -> bool:
    """Append to `$GITHUB_STEP_SUMMARY` when it is set; True when something was written."""
    target = step_summary_target(env)
    if target is None:
        return False
    with target:
        target.write(markdown if markdown.endswith("\n") else markdown + "\n")
    return True


def _untagged(title: str) -> str:
    """Drop a leading `[P1]` tag: the annotation title carries the priority already."""
    stripped = title.lstrip()
    if stripped.startswith("[P") and "]" in stripped[:6]:
        return stripped[stripped.index("]") + 1 :].lstrip()
    return title
