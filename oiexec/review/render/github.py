"""GitHub Actions: a step summary and `::error`/`::warning` annotations on the changed lines.

Annotations are workflow commands, which the runner reads from the step's stdout and stderr;
stdout belongs to the JSONL stream, so write them to stderr.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TextIO

from oiexec.output.reportfile import ReportTarget
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


def escape_data(text: str) -> str:
    """Escape a workflow command's message the way the runner unescapes it."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow command property value (also `:` and `,`, which delimit them)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


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
    rendered = ",".join(f"{key}={escape_property(value)}" for key, value in props)
    message = finding.body.strip() or finding.title
    return f"::{command} {rendered}::{escape_data(message)}"


def github_annotations(review: ReviewOutput, policy: GatePolicy | None = None) -> list[str]:
    policy = policy or GatePolicy()
    return [annotation(f, policy) for f in review.findings]


def write_annotations(
    stream: TextIO, review: ReviewOutput, policy: GatePolicy | None = None
) -> None:
    for line in github_annotations(review, policy):
        stream.write(line + "\n")
    stream.flush()


def step_summary_target(env: Mapping[str, str] | None = None) -> ReportTarget | None:
    """`$GITHUB_STEP_SUMMARY` opened for appending, as every report is opened before the model
    runs (output/reportfile); None when it is not set. Raises `UsageError` for a path that
    cannot take it."""
    path = (os.environ if env is None else env).get("GITHUB_STEP_SUMMARY")
    if not path:
        return None
    return ReportTarget.open(path, "the GitHub step summary", append=True)


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
