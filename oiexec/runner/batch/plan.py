"""What a batch run does with each task: which shard runs it, what its inputs hash to, and
whether this run starts it, resumes it, or leaves the result an earlier run wrote.

Shards are 0-based, as Kubernetes' `JOB_COMPLETION_INDEX` is: `--shard I/N` with
0 <= I < N takes the tasks at positions I, I+N, I+2N, ... of TASKS. That is deterministic,
independent of `--jobs` and of which machine runs it, and balanced to within one task.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from oiexec.core.errors import UsageError
from oiexec.runner.batch.record import TaskRecord
from oiexec.runner.batch.tasks import Task

__all__ = ["Action", "Shard", "decide", "input_hash", "parse_shard", "select", "shard_from_env"]

# ASCII digits, at most 18 (any real shard count fits; 5000 digits made int() raise).
_SHARD_RE = re.compile(r"\s*([0-9]{1,18})\s*/\s*([0-9]{1,18})\s*")


@dataclass(frozen=True)
class Shard:
    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str, *, source: str = "--shard") -> Shard:
    match = _SHARD_RE.fullmatch(text)
    if match is None:
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise UsageError(f"{source} must look like I/N (e.g. 0/4), not {shown!r}")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or not 0 <= index < count:
        raise UsageError(
            f"{source} {text!r} is out of range: N must be at least 1 and I between 0 and N-1 "
            "(shards are 0-based, like JOB_COMPLETION_INDEX)"
        )
    return Shard(index, count)


def shard_from_env(env: Mapping[str, str] | None = None) -> Shard | None:
    """The shard of a Kubernetes Indexed Job (`JOB_COMPLETION_INDEX` of `JOB_COMPLETIONS`),
    or None when the index is not set."""
    env = os.environ if env is None else env
    index = env.get("JOB_COMPLETION_INDEX", "").strip()
    if not index:
        return None
    count = env.get("JOB_COMPLETIONS", "").strip()
    if not count:
        raise UsageError(
            "JOB_COMPLETION_INDEX is set but JOB_COMPLETIONS is not; set it to the Job's "
            "`completions` (e.g. from the pod spec) or pass --shard I/N"
        )
    return parse_shard(f"{index}/{count}", source="JOB_COMPLETION_INDEX/JOB_COMPLETIONS")


def select(tasks: Sequence[Task], shard: Shard | None) -> list[Task]:
    if shard is None:
        return list(tasks)
    return [task for task in tasks if task.index % shard.count == shard.index]


def input_hash(task: Task, options: Sequence[str], base: str | None) -> str:
    """sha256 over what decides a task's outcome: its keys, the exec options given to every
    task, and the commit it starts from (the `ref` as written when it cannot be resolved
    before running, e.g. a URL). Not --jobs, --out or --shard."""
    canonical = json.dumps(
        {"task": task.canonical(), "options": list(options), "base": base},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class Action(Enum):
    RUN = "run"  # start from a fresh workspace
    RESUME = "resume"  # --retry-failed: continue the failed session in its kept workspace
    SKIP = "skip"  # finished earlier with the same inputs


def decide(previous: TaskRecord | None, digest: str, *, retry_failed: bool) -> Action:
    if previous is None or previous.input_hash != digest:
        return Action.RUN
    if retry_failed and previous.status != "success":
        return Action.RESUME
    return Action.SKIP
