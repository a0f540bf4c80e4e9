"""What a matrix run came to, per combination: the `matrix` section of summary.json, computed
from the runs' records alone (so a single run, a merge of its shards and `batch report` over
either compute the same numbers), and the failure classes every batch counts.

pass@k is the unbiased estimator of Chen et al. (2021, "Evaluating Large Language Models
Trained on Code"): for a task run n times with c successes, the chance that at least one of
k runs drawn without replacement succeeds, 1 - C(n-c, k) / C(n, k); a combination's pass@k is
its mean over the tasks run at least k times. Computed with exact fractions (math.comb), cut
to a float only when written. n counts the runs that ended: a run the batch never started or
stopped (not_run, interrupted, cost_limit, missing) is no sample.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from oiexec.core.errors import FAILURE_CLASSES
from oiexec.runner.batch.costs import per_success, total_cost
from oiexec.runner.batch.record import FINISHED, TaskRecord, failure_class_of_record

__all__ = [
    "Combination",
    "class_counts",
    "combination_label",
    "group",
    "matrix_section",
    "pass_at_k",
    "record_class",
]


def pass_at_k(n: int, c: int, k: int) -> Fraction:
    """The unbiased pass@k of one task run `n` times with `c` successes (k <= n)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@{k} needs 1 <= k <= n and 0 <= c <= n (n={n}, c={c})")
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def record_class(record: TaskRecord) -> str | None:
    """The failure class a report counts a record under; None for a success and for a task
    no shard reported (`missing`: counted by status, it has no class)."""
    if record.status == "success" or record.status == "missing":
        return None
    if record.status in ("interrupted", "not_run"):
        return "interrupted"
    if record.status == "cost_limit":
        return "budget"
    return failure_class_of_record(record)


def class_counts(records: Sequence[TaskRecord]) -> dict[str, int]:
    """Every failure class (docs/exec.md "Failure classes") with how many records have it."""
    counts: dict[str, int] = dict.fromkeys(FAILURE_CLASSES, 0)
    for record in records:
        name = record_class(record)
        if name is not None:
            counts[name] += 1
    return counts


def combination_label(combination: dict[str, str]) -> str:
    """`model=gpt-5.5 harness=native`; `all runs` for a `--repeat` without `--matrix`."""
    return " ".join(f"{key}={value}" for key, value in combination.items()) or "all runs"


@dataclass
class Combination:
    """The runs of one combination, in TASKS order."""

    combination: dict[str, str]
    records: list[TaskRecord] = field(default_factory=list)

    @property
    def label(self) -> str:
        return combination_label(self.combination)


def group(records: Sequence[TaskRecord]) -> list[Combination] | None:
    """The matrix runs by combination, in the order their first runs come (the order
    `--matrix` gave); None when no record is a matrix run."""
    groups: dict[str, Combination] = {}
    for record in sorted(records, key=lambda r: r.index):
        if record.combination is None:
            continue
        key = repr(sorted(record.combination.items()))
        groups.setdefault(key, Combination(dict(record.combination))).records.append(record)
    return list(groups.values()) or None


def _pass_rates(records: Sequence[TaskRecord], repeat: int) -> list[float | None]:
    samples: dict[str, tuple[int, int]] = {}
    for record in records:
        task = record.task or record.id
        n, c = samples.get(task, (0, 0))
        if record.status in FINISHED:
            n, c = n + 1, c + (record.status == "success")
        samples[task] = (n, c)
    rates: list[float | None] = []
    for k in range(1, repeat + 1):
        values = [pass_at_k(n, c, k) for n, c in samples.values() if n >= k]
        rates.append(float(sum(values, Fraction(0)) / len(values)) if values else None)
    return rates


def _stats(group_: Combination, repeat: int) -> dict[str, Any]:
    records = group_.records
    ended = [r for r in records if r.status in FINISHED]
    solved = {r.task or r.id for r in records if r.status == "success"}
    rates = _pass_rates(records, repeat)

    def mean(values: list[float]) -> float | None:
        return round(sum(values) / len(values), 3) if values else None

    return {
        "combination": group_.combination,
        "label": group_.label,
        "tasks": len({r.task or r.id for r in records}),
        "runs": len(ended),
        "solved_runs": sum(r.status == "success" for r in records),
        "solved_tasks": len(solved),
        "pass_at": {str(k): rate for k, rate in enumerate(rates, start=1)},
        "mean_turns": mean([float(r.turns) for r in ended]),
        "mean_duration_s": mean([r.duration_s for r in ended]),
        "cost_usd": total_cost(records),
        "cost_per_success_usd": per_success(records),
        "failure_classes": class_counts(records),
    }


def matrix_section(records: Sequence[TaskRecord]) -> dict[str, Any] | None:
    """summary.json's `matrix`: the keys and values seen, the repeat count and each
    combination's numbers; None for a plain batch."""
    groups = group(records)
    if groups is None:
        return None
    axes: dict[str, list[str]] = {}
    for item in groups:
        for key, value in item.combination.items():
            values = axes.setdefault(key, [])
            if value not in values:
                values.append(value)
    repeat = max((r.repeat or 1 for item in groups for r in item.records), default=1)
    return {
        "axes": axes,
        "repeat": repeat,
        "combinations": [_stats(item, repeat) for item in groups],
    }
