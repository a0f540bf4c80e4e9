"""What a batch cost: the total and the cost per successful task (summary.json, junit.xml,
the step summary, the closing line), and `--max-total-cost`, which starts no further task
once the tasks' costs add up to the limit.

A task's cost is its session's total (runner/batch/task_run: every attempt of it included),
as the task's own process reported it. The limit is kept between task starts: a task that is
running when the total reaches it ends at its own limits (`--max-cost`, `--max-turns`), so
the total can pass the limit by what the tasks under way spend. With shards, each shard keeps
the limit for its own tasks (a machine cannot see another's spending).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from oiexec.core.costs import exact_usd, show_usd, sum_usd
from oiexec.runner.batch.record import UNSTARTED, TaskRecord

__all__ = ["TotalCost", "cost_line", "per_success", "total_cost"]


def total_cost(records: Sequence[TaskRecord]) -> float | None:
    """What every task cost together; None when any task's cost is unknown."""
    return sum_usd(record.cost_usd for record in records)


def per_success(records: Sequence[TaskRecord]) -> float | None:
    """The total over the tasks that succeeded (failed tasks' spending included: it is what
    a success cost); None with no success or an unknown total."""
    total = total_cost(records)
    successes = sum(record.status == "success" for record in records)
    return None if total is None or not successes else exact_usd(total / successes)


def cost_line(name: str, records: Sequence[TaskRecord], limit: float | None = None) -> str:
    """The batch's closing line: `batch nightly: 3 of 5 task(s) succeeded; cost $0.0123,
    $0.0041 per successful task; --max-total-cost $0.01 reached: 2 task(s) not run`."""
    successes = sum(record.status == "success" for record in records)
    line = f"batch {name}: {successes} of {len(records)} task(s) succeeded; "
    line += f"cost {show_usd(total_cost(records))}"
    if successes:
        line += f", {show_usd(per_success(records))} per successful task"
    stopped = sum(record.status == "cost_limit" for record in records)
    if stopped:
        named = f"--max-total-cost ${limit:g}" if limit is not None else "--max-total-cost"
        line += f"; {named} reached: {stopped} task(s) not run"
    return line


@dataclass
class TotalCost:
    """`--max-total-cost`: what the batch's tasks have cost so far, finished ones of an
    earlier run into the same --out included, and whether another task may start."""

    limit: float | None
    spent: float = 0.0
    #: A finished task whose cost is unknown: the limit can no longer be kept.
    unknown: str | None = None

    def charge(self, record: TaskRecord) -> None:
        if record.cost_usd is not None:
            self.spent += record.cost_usd
        elif record.status not in UNSTARTED and self.unknown is None:
            self.unknown = record.id

    def refusal(self) -> str | None:
        """Why no further task may start (the unstarted tasks' message), or None."""
        if self.limit is None:
            return None
        if self.spent >= self.limit:
            return (
                f"not run: the tasks' costs reached --max-total-cost ${self.limit:g} "
                f"({show_usd(exact_usd(self.spent))} spent)"
            )
        if self.unknown is not None:
            return (
                f"not run: the cost of task {self.unknown!r} is unknown (no price for its "
                f"model), so --max-total-cost ${self.limit:g} cannot be kept; set "
                "[model_pricing]"
            )
        return None
