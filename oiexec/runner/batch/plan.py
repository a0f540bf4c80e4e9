"""What a batch run does with each task: which shard runs it, what its inputs hash to, and
whether this run starts it, resumes it, or leaves the result an earlier run wrote.

Shards are numbered from 1, as Jest, Playwright, Vitest and GitLab's `CI_NODE_INDEX` number
them: `--shard I/N` with 1 <= I <= N takes the tasks at positions I, I+N, I+2N, ... of TASKS
(counting the tasks from 1 too). That is deterministic, independent of `--jobs` and of which
machine runs it, and balanced to within one task. Without the flag the shard comes from the
CI's own variables (`shard_from_env`): GitLab's `parallel:` jobs and Kubernetes' Indexed Jobs
need no arithmetic in their scripts.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from oiexec.core.errors import FAILURE_CLASSES, UsageError
from oiexec.runner.batch.record import TaskRecord, failure_class_of_record
from oiexec.runner.batch.tasks import Task

__all__ = [
    "Action",
    "Shard",
    "ShardChoice",
    "decide",
    "input_hash",
    "parse_retry",
    "parse_shard",
    "select",
    "shard_from_env",
]

# ASCII digits, at most 18 (any real shard count fits; 5000 digits made int() raise).
_SHARD_RE = re.compile(r"\s*([0-9]{1,18})\s*/\s*([0-9]{1,18})\s*")
_NUMBER_RE = re.compile(r"\s*([0-9]{1,18})\s*")


@dataclass(frozen=True)
class Shard:
    """Shard `index` (1-based) of `count`."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def takes(self, position: int) -> bool:
        """Whether the task at 0-based `position` of TASKS is this shard's."""
        return position % self.count == self.index - 1


@dataclass(frozen=True)
class ShardChoice:
    """The shard a run takes and where it came from (said on stderr: a CI variable nobody
    meant to set must not silently skip three quarters of the tasks)."""

    shard: Shard | None
    source: str | None = None

    def describe(self) -> str | None:
        if self.shard is None or self.source is None:
            return None
        return f"batch: shard {self.shard} (from {self.source})"


def parse_shard(text: str, *, source: str = "--shard") -> Shard:
    match = _SHARD_RE.fullmatch(text)
    if match is None:
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise UsageError(f"{source} must look like I/N (e.g. 1/4), not {shown!r}")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or not 1 <= index <= count:
        raise UsageError(
            f"{source} {text.strip()!r} is out of range: N must be at least 1 and I between 1 "
            f"and N (shards are numbered from 1, as in Jest and Playwright: "
            f"--shard 1/{max(count, 2)} ... {max(count, 2)}/{max(count, 2)})"
        )
    return Shard(index, count)


#: (index variable, count variable, whether the index counts from 0), in the order looked at.
_ENV_SHARDS = (
    # GitLab `parallel: N`: CI_NODE_INDEX is 1..N.
    ("CI_NODE_INDEX", "CI_NODE_TOTAL", False),
    # A Kubernetes Indexed Job: JOB_COMPLETION_INDEX is 0..completions-1; the count is not
    # set by Kubernetes, the pod spec sets it (examples/ci/kubernetes/batch.yaml).
    ("JOB_COMPLETION_INDEX", "JOB_COMPLETIONS", True),
)


def shard_from_env(env: Mapping[str, str] | None = None) -> ShardChoice:
    """The shard the CI's variables give: GitLab's `CI_NODE_INDEX` of `CI_NODE_TOTAL`
    (1-based) or a Kubernetes Indexed Job's `JOB_COMPLETION_INDEX` (0-based) of
    `JOB_COMPLETIONS`; no shard when neither index is set. `UsageError` naming the variable
    when a value is not a number in range, the count is missing, or both CIs' are set."""
    env = os.environ if env is None else env
    found = [entry for entry in _ENV_SHARDS if env.get(entry[0], "").strip()]
    if len(found) > 1:
        raise UsageError(
            "both CI_NODE_INDEX (GitLab) and JOB_COMPLETION_INDEX (Kubernetes) are set: "
            "which shard this is cannot be told",
            hint="Pass --shard I/N (1-based), or unset the variable of the other CI.",
        )
    if not found:
        return ShardChoice(None)
    index_name, count_name, zero_based = found[0]
    source = f"{index_name}/{count_name}"
    count_text = env.get(count_name, "").strip()
    if not count_text:
        where = " (the Job's `completions`, in the pod spec)" if zero_based else ""
        raise UsageError(
            f"{index_name} is set but {count_name} is not; set {count_name} to the number of "
            f"shards{where} or pass --shard I/N (1-based)"
        )
    index, count = (_env_number(env, name) for name in (index_name, count_name))
    first = 0 if zero_based else 1
    if count < 1:
        raise UsageError(f"{count_name}={count_text!r} must be at least 1 (the number of shards)")
    if not first <= index < first + count:
        raise UsageError(
            f"{index_name}={env[index_name].strip()!r} is out of range for {count_name}="
            f"{count_text!r}: {index_name} counts from {first}, so it must be between {first} "
            f"and {first + count - 1}"
        )
    return ShardChoice(Shard(index + 1 - first, count), source)


def _env_number(env: Mapping[str, str], name: str) -> int:
    text = env.get(name, "")
    match = _NUMBER_RE.fullmatch(text)
    if match is None:
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise UsageError(f"{name} must be a whole number, not {shown!r}")
    return int(match.group(1))


def select(tasks: Sequence[Task], shard: Shard | None) -> list[Task]:
    if shard is None:
        return list(tasks)
    return [task for task in tasks if shard.takes(task.index)]


def input_hash(task: Task, options: Sequence[str], base: str | None) -> str:
    """sha256 over what decides a task's outcome: its keys, the exec options given to every
    task, and the commit it starts from (the `ref` as written when it cannot be resolved
    before running, e.g. a URL). Not --jobs, --out or --shard."""
    inputs: dict[str, object] = {"task": task.canonical(), "options": list(options), "base": base}
    if task.from_junit:
        # Tonight's report under last night's name is a different task: a rerun into the same
        # --out must fix what fails now, not skip it as done.
        inputs["from_junit_sha256"] = [_report_digest(Path(name)) for name in task.from_junit]
    canonical = json.dumps(
        inputs,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _report_digest(path: Path) -> str | None:
    """sha256 of a JUnit report as `--from-junit` will read it (bounded, no FIFO or device
    waited on); None when it cannot be read, which the task's run then says."""
    from oiexec.runner.from_junit import REPORT_MAX
    from oiexec.sandbox.reader import ReadScope, read_file

    try:
        data = read_file(ReadScope(), path, max_bytes=REPORT_MAX).data
    except (OSError, ValueError):
        return None
    return hashlib.sha256(data).hexdigest()


class Action(Enum):
    RUN = "run"  # start from a fresh workspace
    RESUME = "resume"  # --retry / --retry-failed: continue the failed session in its workspace
    SKIP = "skip"  # finished earlier with the same inputs


def decide(previous: TaskRecord | None, digest: str, *, retry: Collection[str]) -> Action:
    """What a rerun does with a task: run it (new, or its inputs changed), resume it (it
    failed with a class in `retry`: `--retry-failed` passes every class), or skip it."""
    if previous is None or previous.input_hash != digest:
        return Action.RUN
    if previous.status != "success" and failure_class_of_record(previous) in retry:
        return Action.RESUME
    return Action.SKIP


def parse_retry(text: str) -> frozenset[str]:
    """`--retry transient,budget`: the classes named (any order, repeats ignored); `UsageError`
    naming an unknown one and listing the known."""
    names = [name.strip() for name in text.split(",")]
    unknown = [name for name in names if name not in FAILURE_CLASSES]
    if unknown or not names:
        raise UsageError(
            f"--retry: unknown failure class {unknown[0]!r}" if unknown else "--retry: no class",
            hint="Name one or more of " + ", ".join(FAILURE_CLASSES) + ", separated by commas.",
        )
    return frozenset(names)
