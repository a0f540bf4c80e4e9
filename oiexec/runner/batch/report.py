"""The batch's reports, built by one function from the task records: `summary.json`,
`junit.xml`, and the table on stderr.

A single run and `batch merge` of its shards both call `write_reports` with the same records
in the same order (position in TASKS), and nothing else goes in: no timestamps, no host, no
shard. So the two write the same bytes.

summary.json (field names are stable):

    {"batch": NAME,
     "exit_code": 0 | 1 | 13 | 130,
     "totals": {"tasks": N, "<status>": count for every status, "tokens": {...},
                "cost_usd": sum of the tasks' costs (null when any is unknown),
                "cost_per_success_usd": cost_usd / successful tasks (null without one),
                "duration_s": sum of the tasks' durations,
                "failure_classes": {"<class>": count for every failure class}},
     "matrix": {...} (only for `--matrix`/`--repeat`: runner/batch/matrix_stats.py),
     "tasks": [{"index", "id", "status", "exit_code", "message", "turns",
                "tokens": {"input", "cached_input", "output", "reasoning"}, "cost_usd",
                "duration_s", "session_id", "attempts", "refused_writes", "worktree",
                "paths": {"events", "diff", "last_message", "junit"}}, ...]}

A matrix run's task entries also hold `task` (the id in TASKS), `combination` and `repeat`.
Paths are relative to the output directory. Every status but `success` is a failure in
junit.xml, its `type` the failure class (`interrupted`, `not_run` and `cost_limit` are
skipped; the suite's properties are `cost_usd` and `cost_per_success_usd`, and a matrix run
has one suite per combination, with `pass_at_K` too): `no_change` (exit 11, the task's
`require_change` and an empty diff) and `write_refused` (exit 0, but the read-only sandbox
refused `refused_writes` writes) are tasks that did not do what was asked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from junit_xml import TestCase, TestSuite

from oiexec.core.costs import plain_usd, show_usd
from oiexec.core.errors import ExitCode
from oiexec.core.redact import redact
from oiexec.output.junit_text import junit_text
from oiexec.output.reportfile import ReportDir
from oiexec.runner.batch.costs import per_success, total_cost
from oiexec.runner.batch.layout import JUNIT_FILE, SUMMARY_FILE
from oiexec.runner.batch.matrix_stats import class_counts, group, matrix_section, record_class
from oiexec.runner.batch.record import STATUSES, TaskRecord, Tokens

__all__ = [
    "JUNIT_FILE",
    "SUMMARY_FILE",
    "batch_exit_code",
    "print_table",
    "render",
    "write_reports",
]

_SURROGATES = re.compile("[\ud800-\udfff]")


def batch_exit_code(records: Sequence[TaskRecord]) -> int:
    """0 when every task succeeded; 130 when the batch was interrupted before every task
    ended; 13 when `--max-total-cost` left tasks unstarted; 1 otherwise."""
    if any(record.status in ("interrupted", "not_run") for record in records):
        return int(ExitCode.INTERRUPTED)
    if any(record.status == "cost_limit" for record in records):
        return int(ExitCode.TOTAL_COST)
    if all(record.status == "success" for record in records):
        return int(ExitCode.SUCCESS)
    return int(ExitCode.FAILED)


def render(name: str, records: Sequence[TaskRecord]) -> tuple[str, str]:
    """(summary.json text, junit.xml text) for `records` in TASKS order."""
    name = _unicode(name)
    ordered = [_clean(record) for record in sorted(records, key=lambda record: record.index)]
    tokens = Tokens()
    for record in ordered:
        tokens.add(record.tokens)
    totals: dict[str, Any] = {"tasks": len(ordered)}
    totals.update({status: sum(r.status == status for r in ordered) for status in STATUSES})
    totals["tokens"] = vars(tokens)
    totals["cost_usd"] = total_cost(ordered)
    totals["cost_per_success_usd"] = per_success(ordered)
    totals["duration_s"] = round(sum(r.duration_s for r in ordered), 3)
    totals["failure_classes"] = class_counts(ordered)
    summary: dict[str, Any] = {
        "batch": name,
        "exit_code": batch_exit_code(ordered),
        "totals": totals,
    }
    matrix = matrix_section(ordered)
    if matrix is not None:
        summary["matrix"] = matrix
    summary["tasks"] = [record.summary_entry() for record in ordered]
    text = json.dumps(summary, indent=2, ensure_ascii=False) + "\n"
    return text, _junit(name, ordered, matrix)


def _unicode(text: str) -> str:
    """`text` with each lone surrogate as U+FFFD. They come from a name that is not UTF-8 (the
    tasks file's, `--name` in a non-UTF-8 argv) or a `\\ud800` escape in what a task wrote, and
    can be written neither as UTF-8 nor in XML: left in, the reports would not be written."""
    return _SURROGATES.sub("\ufffd", text)


def _clean(record: TaskRecord) -> TaskRecord:
    def text(value: str | None) -> str | None:
        return None if value is None else _unicode(value)

    return replace(
        record,
        id=_unicode(record.id),
        status=_unicode(record.status),
        message=text(record.message),
        session_id=text(record.session_id),
        worktree=text(record.worktree),
        paths={_unicode(key): _unicode(path) for key, path in record.paths.items()},
    )


def write_reports(out: ReportDir, name: str, records: Sequence[TaskRecord]) -> None:
    """summary.json and junit.xml, in the output directory opened before any task ran."""
    summary, junit = render(name, records)
    out.write(SUMMARY_FILE, summary)
    out.write(JUNIT_FILE, junit)


def _junit(name: str, records: Sequence[TaskRecord], matrix: dict[str, Any] | None) -> str:
    """One suite; one per combination for a matrix run (`matrix`, its summary section: the
    combinations in `group`'s order, with their pass@k among the suite's properties)."""
    groups = group(records)
    if groups is None or matrix is None:
        return junit_text([_suite(name, name, records)])
    suites = []
    for item, stats in zip(groups, matrix["combinations"], strict=True):
        suite_name = f"{name} [{item.label}]"
        rates = {f"pass_at_{k}": _rate(rate) for k, rate in stats["pass_at"].items()}
        suites.append(_suite(suite_name, suite_name, item.records, rates))
    # A merge's `missing` runs carry no combination (a lost shard said nothing of them).
    others = [record for record in records if record.combination is None]
    if others:
        suites.append(_suite(name, name, others))
    return junit_text(suites)


def _rate(rate: float | None) -> str:
    return "" if rate is None else f"{rate:.6f}".rstrip("0").rstrip(".")


def _suite(
    name: str,
    classname: str,
    records: Sequence[TaskRecord],
    extra: dict[str, str] | None = None,
) -> TestSuite:
    cases = []
    for record in records:
        case = TestCase(
            record.id,
            classname=classname,
            elapsed_sec=round(record.duration_s, 3),
            stdout=redact(_case_out(record)),
        )
        if record.status == "cost_limit":
            case.add_skipped_info(message=f"{record.status}: {record.message}")
        elif record.status in ("not_run", "interrupted"):
            case.add_skipped_info(message=f"{record.status}: the batch stopped before it ended")
        elif record.status != "success":
            message = redact(record.message or f"exit code {record.exit_code}")
            case.add_failure_info(
                message=f"{record.status} (exit code {record.exit_code}): {message}",
                output=message,
                # The class says what to do about it (retry, raise a budget, fix the task).
                failure_type=record_class(record) or record.status,
            )
        cases.append(case)
    properties = {
        "cost_usd": plain_usd(total_cost(records)),
        "cost_per_success_usd": plain_usd(per_success(records)),
        **(extra or {}),
    }
    return TestSuite(name, cases, properties=properties)


def _case_out(record: TaskRecord) -> str:
    lines = [
        f"status: {record.status}",
        f"exit code: {record.exit_code}",
        f"session: {record.session_id}",
        f"turns: {record.turns}, attempts: {record.attempts}",
        f"cost: {show_usd(record.cost_usd)}",
    ]
    if record.refused_writes:
        lines.append(f"writes refused by the sandbox: {record.refused_writes}")
    lines += [f"{key}: {path}" for key, path in record.paths.items()]
    if record.worktree:
        lines.append(f"worktree (kept): {record.worktree}")
    return "\n".join(lines)


def print_table(
    name: str, records: Sequence[TaskRecord], skipped: set[str], out: Path, stream: TextIO
) -> None:
    """The end-of-batch table on stderr (rich; plain columns when stderr is not a TTY)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"batch {name}: {out}", title_justify="left")
    right = ("exit", "turns", "tokens", "cost", "time")
    for column in ("task", "status", "exit", "turns", "tokens", "cost", "time", "session"):
        table.add_column(column, justify="right" if column in right else "left")
    for record in sorted(records, key=lambda r: r.index):
        status = record.status + (" (earlier run)" if record.id in skipped else "")
        style = "green" if record.status == "success" else "red"
        tokens = record.tokens.input + record.tokens.output
        table.add_row(
            record.id,
            f"[{style}]{status}[/]",
            "" if record.exit_code is None else str(record.exit_code),
            str(record.turns),
            str(tokens),
            show_usd(record.cost_usd),
            f"{record.duration_s:.1f}s",
            record.session_id or "",
        )
    # Off a terminal (CI logs, cron mail) nothing wraps, so session ids stay whole.
    console = Console(file=stream, highlight=False, width=None if stream.isatty() else 200)
    console.print(table)
    kept = [r.worktree for r in records if r.worktree]
    if kept:
        console.print(
            f"Kept worktrees of unsuccessful tasks (for --retry-failed) under {out}: "
            + ", ".join(kept)
        )
