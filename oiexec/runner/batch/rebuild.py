"""`interpreter batch report OUT... [--out DIR] [--compare OLD]`: a matrix run's report built
again from the task entries of one or more output directories (a run, its merge, or its
shards' directories together, combined as `batch merge` combines them).

The numbers are recomputed from the task entries, never taken from the summaries' own
`matrix` sections: so the report of merged shards is the single run's, exactly, and a
summary a task edited (its sandbox may reach DIR) cannot claim a pass rate its runs do not
have. Each entry is checked as `batch merge` checks it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oiexec.core.errors import UsageError
from oiexec.output.reportfile import ReportDir
from oiexec.runner.batch.layout import SUMMARY_FILE
from oiexec.runner.batch.matrix_report import markdown
from oiexec.runner.batch.matrix_stats import group, matrix_section
from oiexec.runner.batch.merge import read_records, read_summary, summary_record
from oiexec.runner.batch.record import TaskRecord
from oiexec.runner.batch.report import render

__all__ = ["REPORT_FILE", "Rebuilt", "rebuild", "write_rebuilt"]

REPORT_FILE = "report.md"
_HINT = "Run the batch with --matrix KEY=V1,V2 and/or --repeat K to compare combinations."


@dataclass(frozen=True)
class Rebuilt:
    summary: str
    markdown: str


def _matrix_records(dirs: Sequence[Path]) -> tuple[str, list[TaskRecord]]:
    """The batch's name and its task records, checked; `UsageError` unless some are matrix
    runs."""
    names, records, _ = read_records(dirs)
    if group(records) is None:
        shown = ", ".join(str(d) for d in dirs)
        raise UsageError(f"{shown}: no matrix run in the summary (a plain batch)", hint=_HINT)
    return (names.pop() if names else "batch"), records


def _old_section(old: Path) -> dict[str, Any]:
    """The matrix of an earlier report: an output directory, or a summary.json by any name."""
    if old.is_dir():
        records = _matrix_records([old])[1]
    elif not old.exists():
        raise UsageError(f"--compare {old}: no such file or directory")
    else:
        summary = read_summary(old.parent, old)
        records = [summary_record(old, i, e) for i, e in enumerate(summary["tasks"], start=1)]
    section = matrix_section(records)
    if section is None:
        raise UsageError(f"--compare {old}: no matrix run in that summary", hint=_HINT)
    return section


def rebuild(dirs: Sequence[Path], compare: Path | None = None) -> Rebuilt:
    """summary.json (as `batch merge` of `dirs` writes it) and report.md; `UsageError` for a
    directory that is not a batch's, entries no run writes, or no matrix."""
    name, records = _matrix_records(dirs)
    summary, _ = render(name, records)
    # The rendered summary holds the section as JSON: the Markdown shows those very numbers.
    section = json.loads(summary)["matrix"]
    old = old_name = None
    if compare is not None:
        old, old_name = _old_section(compare), str(compare)
    return Rebuilt(summary, markdown(name, section, old, old_name))


def write_rebuilt(rebuilt: Rebuilt, out: Path, note: Callable[[str], None]) -> None:
    """DIR/summary.json and DIR/report.md, written with no link followed."""
    target = ReportDir.open(out, "--out")
    try:
        target.write(SUMMARY_FILE, rebuilt.summary)
        target.write(REPORT_FILE, rebuilt.markdown)
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot write the report: {exc.strerror or exc}") from None
    finally:
        target.close()
    note(f"batch report: wrote {out / SUMMARY_FILE} and {out / REPORT_FILE}")
