"""Running one task: its workspace, one `interpreter exec --json` child process, and the
record of what came of it.

Each task is its own process because a run's timeout (SIGALRM), signal handlers and secret
registry are process-global: threads could not keep tasks apart. The processes are forks of a
preloaded zygote (`launcher`), which spares each the interpreter's start-up. The prompt goes to
the child's stdin, never onto a command line or into a shell.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import InitVar, dataclass, field
from pathlib import Path

from oiexec.core.errors import ExitCode, failure_class_for_exit
from oiexec.git import GitError
from oiexec.output.reportfile import ReportDir
from oiexec.runner.batch.child_reports import read_events, read_junit
from oiexec.runner.batch.launcher import Child, Launcher, LaunchError
from oiexec.runner.batch.matrix import run_fields
from oiexec.runner.batch.plan import Action
from oiexec.runner.batch.record import (
    RECORD_FILE,
    Attempt,
    TaskRecord,
    read_output,
    status_for_exit,
    write_record,
)
from oiexec.runner.batch.tasks import Task
from oiexec.runner.batch.workspace import WORKTREE_DIR, Source, full_diff, prepare, release
from oiexec.runner.changes import refused_writes_warning

__all__ = ["PATHS", "BatchContext", "Children", "run_child", "run_task"]

#: The files of a task, relative to its directory (the `paths` of its record).
PATHS = {
    "events": "events.jsonl",
    "diff": "diff.patch",
    "last_message": "last-message.txt",
    "junit": "junit.xml",
    "stderr": "stderr.log",
}
#: A full commit id, SHA-1 or SHA-256.
_COMMIT_RE = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
#: Seconds a child may outlive its own --timeout before it is killed from outside.
KILL_GRACE_S = 30.0


class Children:
    """The running child processes, so an interrupted batch can signal them all."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._procs: set[Child] = set()
        self.stopping = threading.Event()

    def add(self, proc: Child) -> None:
        with self._lock:
            self._procs.add(proc)
        if self.stopping.is_set():
            proc.signal(signal.SIGTERM)

    def discard(self, proc: Child) -> None:
        with self._lock:
            self._procs.discard(proc)

    def signal_all(self, signum: int) -> int:
        with self._lock:
            procs = list(self._procs)
        for proc in procs:
            proc.signal(signum)
        return len(procs)


@dataclass
class BatchContext:
    #: The output directory (absolute); opened once here, before any task runs (`out_dir`).
    out: Path
    #: Exec options every task gets (already validated), in command-line form.
    options: Sequence[str]
    #: The shared --timeout, when given (a task's `timeout` wins).
    timeout_s: float | None
    children: Children
    launcher: Launcher = field(default_factory=Launcher)
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    kill_grace_s: float = KILL_GRACE_S
    #: `out` as the batch already opened it (layout.open_out), else opened here.
    opened: InitVar[ReportDir | None] = None
    #: `out`, held open: the batch writes its files beneath it with no symlink followed, so
    #: a task (whose sandbox may reach DIR, e.g. a shared /tmp) cannot redirect them.
    out_dir: ReportDir = field(init=False)

    def __post_init__(self, opened: ReportDir | None) -> None:
        self.out_dir = opened if opened is not None else ReportDir.open(self.out)


def run_task(
    task: Task,
    source: Source,
    action: Action,
    previous: TaskRecord | None,
    digest: str,
    ctx: BatchContext,
    note: Callable[[str], None],
) -> TaskRecord:
    """Runs `task` to its end and returns its record; the record is also written to
    `DIR/<id>/result.json` when the task finished (not when the batch was interrupted)."""
    task_dir = ctx.out / task.id
    record = TaskRecord(
        index=task.index,
        id=task.id,
        status="failed",
        cost_usd=0.0,  # until its process starts: what fails before that spends nothing
        paths={key: f"{task.id}/{name}" for key, name in PATHS.items() if key != "stderr"},
        input_hash=digest,
        **run_fields(task),
    )
    record.message = _make_task_dir(ctx, task.id)
    if record.message is not None:
        return record
    resumed = _resumed(task, action, previous, task_dir, note)
    if action is Action.RESUME and previous is not None:
        # A retry, resumed or (its session or worktree gone) started afresh: one more attempt
        # of the same task, so its earlier ones stay on the record.
        record.attempts, record.history = previous.attempts, list(previous.history)
    started = time.monotonic()
    try:
        cwd, base = _workspace(task, source, resumed, ctx, record)
    except GitError as exc:
        if ctx.children.stopping.is_set():  # a terminal's Ctrl-C reaches git too: not a failure
            return _stopped_before_start(record)
        record.message = f"could not prepare the workspace: {exc}"
        # A ref or repository the task names that git cannot use: the task file's setup.
        record.failure_class = "config"
        record.attempts += 1
        record.history.append(Attempt(record.status, None, record.failure_class))
        write_record(ctx.out_dir, record)
        return record
    if ctx.children.stopping.is_set():
        # Stopped while its workspace was made: not started now (a signal after this check
        # reaches it as it starts, `Children.add`).
        return _stopped_before_start(record)
    record.attempts += 1
    record.cost_usd = None  # unknown until its reports say
    code, killed, lost = _run_once(task, ctx, cwd, task_dir, resumed)
    read_events(ctx.out, task_dir / PATHS["events"], record)
    read_junit(ctx.out, task_dir / PATHS["junit"], record, resumed.turns if resumed else 0)
    earlier = resumed.duration_s if resumed else 0.0
    record.duration_s = round(earlier + time.monotonic() - started, 3)
    _judge(record, code, killed, lost)
    record.history.append(Attempt(record.status, record.exit_code, record.failure_class))
    if record.status == "interrupted" or (
        ctx.children.stopping.is_set() and code < 0 and lost is None
    ):
        record.status = "interrupted"
        return record  # not finished: a rerun starts it again
    _finish(task, source, ctx, record, base if resumed else None, note)
    return record


def _make_task_dir(ctx: BatchContext, task_id: str) -> str | None:
    """Makes the task's directory; why it could not be used, or None."""
    try:
        ctx.out_dir.makedirs(task_id)
    except OSError as exc:  # e.g. another task left a link there: said in the summary
        return f"could not make its directory: {exc.strerror or exc}"
    worktree = ctx.out / task_id / WORKTREE_DIR
    if worktree.is_symlink():
        # Never the batch's own (a worktree is a directory): planted by a task that reaches
        # DIR, it would make this task's workspace wherever it points. Removed, not followed.
        with contextlib.suppress(OSError):
            ctx.out_dir.unlink(f"{task_id}/{WORKTREE_DIR}")
        if worktree.is_symlink():
            return "its worktree is a symbolic link that could not be removed"
    return None


def _resumed(
    task: Task,
    action: Action,
    previous: TaskRecord | None,
    task_dir: Path,
    note: Callable[[str], None],
) -> TaskRecord | None:
    """The earlier run this one continues (its session, in its kept worktree), or None for a
    fresh start."""
    if action is not Action.RESUME or previous is None or previous.session_id is None:
        return None
    if not (task_dir / WORKTREE_DIR).is_dir():
        note(f"{task.id}: its kept worktree is gone; running it again from the start")
        return None
    return previous


def _workspace(
    task: Task, source: Source, resumed: TaskRecord | None, ctx: BatchContext, record: TaskRecord
) -> tuple[Path, str]:
    """Where the task runs and its base commit: the kept worktree of the run it resumes, or
    a fresh one (its earlier files cleared). `GitError` when it cannot be had."""
    task_dir = ctx.out / task.id
    if resumed is not None:  # its attempts and history are on the record already (run_task)
        return task_dir / WORKTREE_DIR / source.subdir, _base_of(ctx.out, task_dir)
    _clear(ctx.out_dir, task.id)
    cwd, base = prepare(source, task_dir)
    ctx.out_dir.write(f"{task.id}/.base", base + "\n")
    return cwd, base


def _run_once(
    task: Task, ctx: BatchContext, cwd: Path, task_dir: Path, resumed: TaskRecord | None
) -> tuple[int, str | None, str | None]:
    """One task process to its end: (exit status, why it was killed from outside, why it was
    lost: not started, or its zygote died under it)."""
    argv = _argv(task, ctx, cwd, task_dir, resumed.session_id if resumed else None)
    prompt = _retry_prompt(task, resumed) if resumed else task.prompt
    timeout = task.timeout if task.timeout is not None else ctx.timeout_s
    try:
        code, killed = run_child(
            argv, prompt, ctx, task_dir, timeout=timeout, append=resumed is not None
        )
    except LaunchError as exc:
        # Said in the record, never a silent fail.
        return -1, None, exc.message
    return code, killed, None


def _judge(record: TaskRecord, code: int, killed: str | None, lost: str | None) -> None:
    """The record's exit code, status and message from how the process ended and what its
    reports said."""
    said = record.failure_class  # `turn.failed`'s, if the run lived to say it
    if lost is not None:
        record.exit_code, record.status, record.message = None, "failed", lost
        record.failure_class = "internal"
    elif killed is not None:
        record.exit_code, record.status, record.message = int(ExitCode.TIMEOUT), "timeout", killed
        record.failure_class = "budget"
    elif code < 0:
        record.exit_code, record.status = code, "failed"
        record.message = f"killed by signal {-code}"
        record.failure_class = "interrupted"
    else:
        record.exit_code, record.status = code, status_for_exit(code)
        # The run's own word first: exit 1 is a provider outage as well as a crash.
        record.failure_class = said if code != 0 and said else failure_class_for_exit(code)
    if record.status == "success" and record.refused_writes:
        # The model said it was done, but nothing it wrote got through: not a success.
        record.status = "write_refused"
        record.message = refused_writes_warning(record.refused_writes)
        record.failure_class = "sandbox"
    if record.status == "success":
        record.message = None


def _finish(
    task: Task,
    source: Source,
    ctx: BatchContext,
    record: TaskRecord,
    resumed_base: str | None,
    note: Callable[[str], None],
) -> None:
    """A finished task's files: the whole diff of a resumed run (from `resumed_base`), its
    worktree released on success, and its record written."""
    worktree = ctx.out / task.id / WORKTREE_DIR
    if resumed_base is not None and worktree.is_dir():
        try:
            ctx.out_dir.write(f"{task.id}/{PATHS['diff']}", full_diff(worktree, resumed_base))
        except (GitError, OSError) as exc:
            note(f"{task.id}: could not write diff.patch: {exc}")
    if record.status == "success":
        try:
            release(source, ctx.out / task.id)
        except GitError as exc:
            note(f"{task.id}: could not remove its worktree: {exc}")
    if worktree.exists():
        record.worktree = f"{task.id}/{WORKTREE_DIR}"
    try:
        write_record(ctx.out_dir, record)
    except OSError as exc:  # e.g. its directory swapped for a link: in the summary instead
        record.status, record.message = "failed", f"could not write its result: {exc.strerror}"


def _argv(
    task: Task, ctx: BatchContext, cwd: Path, task_dir: Path, session_id: str | None
) -> list[str]:
    argv = ["exec"]
    if session_id is not None:
        argv.append("resume")
    argv += [*ctx.options, "--json", "--color", "never", "-C", str(cwd)]
    argv += ["-o", str(task_dir / PATHS["last_message"]), "--junit", str(task_dir / PATHS["junit"])]
    # A resumed run's own patch covers only what it changed; the whole one is computed after.
    diff = task_dir / (".resume.patch" if session_id else PATHS["diff"])
    argv += ["--diff", str(diff)]
    if task.model is not None:
        argv += ["-m", task.model]
    if task.profile is not None:
        argv += ["-p", task.profile]
    if task.harness is not None:
        argv += ["-c", f"harness={json.dumps(task.harness)}"]
    if task.sandbox is not None:
        argv += ["-s", task.sandbox]
    if task.max_turns is not None:
        argv += ["--max-turns", str(task.max_turns)]
    if task.timeout is not None:
        argv += ["--timeout", repr(task.timeout)]
    if task.check is not None:
        argv += ["--check", task.check]
    if task.require_change is not None:  # after the batch's options: the task's key wins
        argv.append("--require-change" if task.require_change else "--no-require-change")
    for report in task.from_junit or ():
        argv += ["--from-junit", report]
    if session_id is not None:
        argv.append(session_id)
    if task.prompt or session_id is not None:
        argv.append("-")  # else a `from_junit` task: the reports are the prompt
    return argv


def _retry_prompt(task: Task, previous: TaskRecord) -> str:
    reason = previous.message or f"exit code {previous.exit_code}"
    return (
        f"The previous attempt at this task did not succeed ({previous.status}: {reason}). "
        "Continue from where you stopped and finish the task.\n\n"
        f"The task was:\n{task.prompt or 'to fix the failing tests below.'}"
    )


def run_child(
    argv: Sequence[str],
    prompt: str,
    ctx: BatchContext,
    task_dir: Path,
    *,
    timeout: float | None,
    append: bool,
) -> tuple[int, str | None]:
    """Runs one task process (`interpreter ARGV...`), the prompt on its stdin, stdout to
    events.jsonl and stderr to stderr.log (appended to for a resumed run). Returns (exit
    status, why it was killed from outside, or None): a child still running `kill_grace_s`
    after its own `timeout` has its whole process group killed. `LaunchError` when it could
    not be started, or (once it has ended) when the zygote that started it died."""
    deadline = None if timeout is None else time.monotonic() + timeout + ctx.kill_grace_s
    # Opened beneath the held output directory: a task directory another task swapped for a
    # link is refused, not followed (output/reportfile.ReportDir).
    streams: list[int] = []
    try:
        for name in (PATHS["events"], PATHS["stderr"]):
            relative = (task_dir.relative_to(ctx.out) / name).as_posix()
            streams.append(ctx.out_dir.open_file(relative, append=append))
    except OSError as exc:
        for fd in streams:
            os.close(fd)
        raise LaunchError(f"cannot open the task's output files: {exc.strerror or exc}") from None
    try:
        proc = ctx.launcher.start(
            argv, env=ctx.env, stdin=prompt, stdout=streams[0], stderr=streams[1], append=append
        )
    finally:
        for fd in streams:
            os.close(fd)
    ctx.children.add(proc)
    try:
        killed = None
        while (code := proc.wait(0.2)) is None:
            if deadline is not None and time.monotonic() > deadline:
                proc.signal(signal.SIGKILL)
                while (code := proc.wait(1.0)) is None:
                    pass
                killed = (
                    f"killed: still running {ctx.kill_grace_s:g}s after its {timeout:g}s timeout"
                )
                break
    finally:
        ctx.children.discard(proc)
        proc.signal(signal.SIGKILL)  # leftovers of the child's group
    return code, killed


def _stopped_before_start(record: TaskRecord) -> TaskRecord:
    """Not written: a rerun with the same --out starts the task again."""
    record.status = "not_run"
    record.message = "the batch was stopped before this task started"
    return record


def _clear(out: ReportDir, task_id: str) -> None:
    """A fresh start: nothing of an earlier, different or unfinished run may be mistaken for
    this one's."""
    for name in (*PATHS.values(), RECORD_FILE, ".base", ".resume.patch"):
        with contextlib.suppress(FileNotFoundError):
            out.unlink(f"{task_id}/{name}")


def _base_of(out: Path, task_dir: Path) -> str:
    raw = read_output(out, task_dir / ".base", max_bytes=4096)
    base = "" if raw is None else raw.decode("utf-8", errors="replace").strip()
    # A commit id only: it reaches git's command line (`read-tree BASE`), and the file lies
    # where other tasks may write (`--index-output=...` would be an option to git).
    if not _COMMIT_RE.fullmatch(base):
        raise GitError(f"the base commit of {task_dir} is unknown", cwd=task_dir)
    return base
