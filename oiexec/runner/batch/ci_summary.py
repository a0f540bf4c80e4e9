"""A batch in GitHub Actions: one step-summary block and one `::error` for the whole batch.

Each task is an `exec --json` child; left to itself each would append its own block to
`$GITHUB_STEP_SUMMARY` (GitHub caps a step's summary at 1 MiB, and 500 blocks say less than one
table). So the children do not get the variable (`child_environment`), and the batch reports
once, through the same `CiReporter` an exec run uses: the counts per status and per failure
class, the tasks that did not succeed (the first `MAX_LISTED` of them), turns, tokens and cost
over every task (and the cost per successful task), the paths of the batch's own reports, and
for a matrix batch its charts and table (`matrix_report`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from oiexec.core.costs import show_usd
from oiexec.core.events import Usage
from oiexec.output.ci import RunSummary
from oiexec.runner.batch.costs import per_success, total_cost
from oiexec.runner.batch.matrix_stats import class_counts, matrix_section
from oiexec.runner.batch.record import STATUSES, TaskRecord

__all__ = ["MAX_LISTED", "batch_summary", "child_environment"]

#: Tasks that did not succeed named in the summary; the rest are counted.
MAX_LISTED = 20


def child_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The environment of a task's child: the batch alone writes the step summary."""
    return {name: value for name, value in env.items() if name != "GITHUB_STEP_SUMMARY"}


def batch_summary(
    name: str,
    records: Sequence[TaskRecord],
    exit_code: int,
    out: Path,
    max_total_cost: float | None = None,
) -> RunSummary:
    counts = Counter(record.status for record in records)
    succeeded = counts.get("success", 0)
    outcome = f"{succeeded} of {len(records)} task(s) succeeded"
    failed = [record for record in records if record.status != "success"]
    reason = None
    if failed:
        shown = ", ".join(f"{r.id} ({r.status})" for r in failed[:MAX_LISTED])
        more = len(failed) - MAX_LISTED
        reason = f"{len(failed)} task(s) did not succeed: {shown}" + (
            f" and {more} more" if more > 0 else ""
        )
    usage = Usage(
        input_tokens=sum(r.tokens.input for r in records),
        cached_input_tokens=sum(r.tokens.cached_input for r in records),
        output_tokens=sum(r.tokens.output for r in records),
    )
    per_status = ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts.get(s))
    total = total_cost(records)
    notes = [f"tasks: {per_status or 'none'}"]
    if succeeded:
        notes.append(f"cost per successful task: {show_usd(per_success(records))}")
    classes = class_counts(records)
    if any(classes.values()):
        named = ", ".join(f"{n} {name}" for name, n in classes.items() if n)
        notes.append(f"failure classes: {named}")
    if counts.get("cost_limit"):
        limit = "" if max_total_cost is None else f" ${max_total_cost:g}"
        notes.append(f"--max-total-cost{limit} reached: {counts['cost_limit']} task(s) not started")
    return RunSummary(
        command=f"batch {name}",
        outcome=outcome,
        exit_code=exit_code,
        reason=reason,
        turns=sum(record.turns for record in records),
        usage=usage,
        cost_usd=total,
        session_cost_usd=total,
        reports=[
            ("summary", str(out / "summary.json")),
            ("JUnit", str(out / "junit.xml")),
        ],
        notes=notes,
        markdown=_matrix_markdown(name, records),
    )


def _matrix_markdown(name: str, records: Sequence[TaskRecord]) -> str | None:
    """A matrix batch's charts and table (runner/batch/matrix_report.py), None otherwise."""
    section = matrix_section(records)
    if section is None:
        return None
    from oiexec.runner.batch.matrix_report import markdown

    return markdown(name, section)
