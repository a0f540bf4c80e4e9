"""`interpreter batch TASKS --out DIR [...]`, `interpreter batch merge DIR... --out DIR` and
`interpreter batch report DIR... [--out DIR] [--compare OLD]`.

`batch` is a group whose default is the run, as `exec` is: a first argument that is not
`merge`, `report` (or `run`) is the tasks file. The exec options given here apply to every task (a
task's own keys win, except that a task's `sandbox` or `profile` may only tighten the sandbox
they give: runner/batch/ceiling.py); they are passed on to each task's `interpreter exec` as
written.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TYPE_CHECKING, Any

import click

from oiexec.cli.options import COUNT_PARAM, NumberParam, exec_options
from oiexec.core.numbers import POSITIVE

if TYPE_CHECKING:
    from oiexec.runner.batch.progress import Events

_RUN = "run"

#: Exec options a batch sets per task itself; giving them once for all tasks makes no sense.
_PER_TASK = {
    "cd": "-C/--cd (each task runs in its own worktree; use the task's `repo`)",
    "last_message_file": "-o/--output-last-message (written to DIR/<id>/last-message.txt)",
    "junit_file": "--junit (written to DIR/<id>/junit.xml and DIR/junit.xml)",
    "diff_file": "--diff (written to DIR/<id>/diff.patch)",
    "ephemeral": "--ephemeral (a batch keeps sessions so failed tasks can be resumed)",
}
#: Exec options that only shape this process's own output; not passed on, not hashed.
_LOCAL = {"json_mode", "experimental_json", "color"}


class BatchGroup(click.Group):
    """`batch [OPTIONS] TASKS` runs; `batch merge ...` merges; `batch report ...` reports."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] in self.commands:
            return super().resolve_command(ctx, args)
        return _RUN, self.commands[_RUN], args


@click.group(
    "batch",
    cls=BatchGroup,
    invoke_without_command=False,
    subcommand_metavar="TASKS --out DIR [OPTIONS] | merge DIR... --out DIR | report DIR...",
    context_settings={"ignore_unknown_options": True},
)
def batch_group() -> None:
    """Run many tasks, each in its own git worktree and session, and report on them.

    `interpreter batch TASKS --out DIR` is `interpreter batch run ...`: see
    `interpreter batch run --help` for every option. Exit code: 0 when every task
    succeeded, 1 when any failed or hit a limit, 2 for a bad tasks file or usage,
    13 when --max-total-cost left tasks unstarted, 130 when interrupted.
    """


@batch_group.command(_RUN)
@click.argument("tasks_file", metavar="TASKS", type=click.Path(dir_okay=False, path_type=str))
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=str),
    callback=lambda _ctx, _param, value: _out_value(value),
    help="Output directory: new, empty, or one a batch wrote (a rerun there skips finished tasks).",
)
@click.option(
    "-j",
    "--jobs",
    type=COUNT_PARAM,
    help="Tasks run at once (default: the number of CPU cores).",
)
@click.option(
    "--shard",
    metavar="I/N",
    help="Run slice I of N, numbered from 1 as in Jest and Playwright (1/4 ... 4/4): the "
    "tasks at positions I, I+N, I+2N, ... of TASKS. Default: GitLab's CI_NODE_INDEX/"
    "CI_NODE_TOTAL or a Kubernetes Indexed Job's JOB_COMPLETION_INDEX/JOB_COMPLETIONS when "
    "set, else every task.",
)
@click.option(
    "--retry-failed",
    is_flag=True,
    help="Resume the sessions of tasks that finished unsuccessfully (same inputs).",
)
@click.option(
    "--retry",
    "retry_classes",
    multiple=True,
    metavar="CLASSES",
    help="Resume only the unsuccessful tasks whose failure class is one of CLASSES, comma-"
    "separated (transient, budget, task, config, usage, sandbox, internal, interrupted); e.g. "
    "--retry transient after a provider outage. Repeatable.",
)
@click.option(
    "--matrix",
    "matrix_specs",
    multiple=True,
    metavar="KEY=V1,V2",
    help="Run every task once per combination of these values (KEY: model, harness or "
    "profile; repeatable, one key each: the runs are the product). Each run gets its own id "
    "(<id>.<values>.r<N>), worktree and record; summary.json gets a `matrix` section with "
    "pass@k per combination.",
)
@click.option(
    "--repeat",
    type=COUNT_PARAM,
    help="Run each task (each combination of --matrix) this many times, for pass@1 ... "
    "pass@K (max 100).",
)
@click.option("--name", help="Batch name in the reports (default: the TASKS file name stem).")
@click.option(
    "--max-total-cost",
    "max_total_cost",
    type=NumberParam(POSITIVE, "USD"),
    metavar="USD",
    help="Start no further task once the tasks' costs add up to USD (tasks under way end at "
    "their own limits); the tasks not started are `cost_limit` and the batch exits 13.",
)
@exec_options
@click.pass_context
def run_command(
    ctx: click.Context,
    /,
    tasks_file: str,
    out_dir: str,
    jobs: int | None,
    shard: str | None,
    retry_failed: bool,
    retry_classes: tuple[str, ...],
    name: str | None,
    max_total_cost: float | None,
    matrix_specs: tuple[str, ...],
    repeat: int | None,
    **params: Any,
) -> None:
    """Run every task of TASKS (JSONL, or TOML `[[tasks]]`) and write DIR/summary.json,
    DIR/junit.xml and DIR/<id>/{events.jsonl,diff.patch,last-message.txt,junit.xml}.

    Task keys: id and prompt (required); repo, ref, check, model, harness, sandbox,
    max_turns, timeout, profile, require_change (not a key --matrix varies), from_junit
    (JUnit reports to fix, relative to TASKS; the prompt is then optional). An id is a
    directory name: letters, digits, '.', '_', '-' (starting with a letter or digit, at
    most 128), never
    summary.json, junit.xml or shard.json. The exec options below apply to every task; they are
    also the ceiling of its sandbox: a task's `sandbox` or `profile` may only tighten it.
    """
    _start_launcher()
    from oiexec.core.errors import OiexecError
    from oiexec.runner.batch.progress import Events

    json_mode = params.get("json_mode") or params.get("experimental_json")
    events = Events(sys.stdout if json_mode else None)
    try:
        code = _run(
            ctx, tasks_file, out_dir, jobs, shard, (retry_failed, retry_classes), name,
            max_total_cost, (matrix_specs, repeat), params, events,
        )  # fmt: skip
    except OiexecError as exc:
        # With --json a program reading stdout alone learns why the batch never started.
        events.failed(exc.message, int(exc.exit_code))
        raise
    ctx.exit(code)


def _start_launcher() -> None:
    """Starts the process tasks are forked from (`runner/launch.py`) before anything else:
    its imports (~0.5 s of a core) then overlap the batch's own imports, config, tasks file
    and worktrees instead of following them, a delay every batch paid before its first task
    (a 1-task batch of one turn, with the zygote's lean start-up: 1.5-1.9 s -> 1.2-1.4 s on
    2 cores). A batch that stops before its first task takes it along; one that cannot
    start it says so when a task would need it."""
    from oiexec.runner.launch import LaunchError, prestart

    with contextlib.suppress(LaunchError):
        prestart()


def _run(
    ctx: click.Context,
    tasks_file: str,
    out_dir: str,
    jobs: int | None,
    shard: str | None,
    retry: tuple[bool, tuple[str, ...]],
    name: str | None,
    max_total_cost: float | None,
    matrix: tuple[tuple[str, ...], int | None],
    params: dict[str, Any],
    events: Events,
) -> int:
    from pathlib import Path

    from oiexec.cli.request import build_request
    from oiexec.core.errors import FAILURE_CLASSES, UsageError
    from oiexec.runner.batch.ceiling import Ceiling
    from oiexec.runner.batch.matrix import parse_matrix
    from oiexec.runner.batch.plan import ShardChoice, parse_retry, parse_shard, shard_from_env
    from oiexec.runner.batch.pool import BatchOptions, run_batch
    from oiexec.runner.batch.warm import warm_up

    given = [key for key in _PER_TASK if _given(ctx, key)]
    if given:
        raise UsageError(
            "not available in batch: " + "; ".join(_PER_TASK[key] for key in given),
            hint="Remove it; every task gets its own.",
        )
    tasks_path = Path(tasks_file)
    runs = parse_matrix(*matrix)
    # The sandbox these options give is the most any task may have (see runner.batch.ceiling).
    ceiling = Ceiling(build_request(params, ""))
    # The flag wins over the CI's variables (which a job may set for other reasons).
    choice = ShardChoice(parse_shard(shard), "--shard") if shard is not None else shard_from_env()
    jobs = jobs or os.cpu_count() or 1
    retry_failed, retry_classes = retry
    classes: frozenset[str] = frozenset(FAILURE_CLASSES) if retry_failed else frozenset()
    for text in retry_classes:
        classes |= parse_retry(text)
    options = BatchOptions(
        tasks_file=tasks_path,
        out=Path(out_dir),
        name=name or tasks_path.stem,
        jobs=jobs,
        shard=choice.shard,
        shard_source=choice.source,
        retry=classes,
        exec_options=_exec_argv(ctx),
        timeout_s=params.get("timeout_s"),
        limit=ceiling.problems,
        warm_up=lambda tasks: warm_up(ceiling.config, jobs=jobs, tasks=tasks),
        max_total_cost=max_total_cost,
        matrix=runs,
    )
    return run_batch(options, events=events)


@batch_group.command("merge")
@click.argument(
    "dirs", nargs=-1, required=True, type=click.Path(file_okay=False, exists=True, path_type=str)
)
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=str),
    callback=lambda _ctx, _param, value: _out_value(value),
    help="Directory for the merged summary.json, junit.xml and task files.",
)
def merge_command(dirs: tuple[str, ...], out_dir: str) -> None:
    """Combine the output directories of a batch's shards into one, as a single run over
    all tasks would have written it. Exits as that run would: 0 only if every task
    succeeded."""
    from pathlib import Path

    from oiexec.runner.batch.merge import merge_batches

    def to_stderr(message: str) -> None:
        click.echo(message, err=True)

    code = merge_batches([Path(d) for d in dirs], Path(out_dir), warn=to_stderr, note=to_stderr)
    click.get_current_context().exit(code)


@batch_group.command("report")
@click.argument(
    "dirs", nargs=-1, required=True, type=click.Path(file_okay=False, exists=True, path_type=str)
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=str),
    callback=lambda _ctx, _param, value: None if value is None else _out_value(value),
    help="Write DIR/summary.json and DIR/report.md (default: the Markdown on stdout).",
)
@click.option(
    "--compare",
    "compare",
    type=click.Path(exists=True, path_type=str),
    metavar="OLD",
    help="Add the change against an earlier report (its --out directory or summary.json): "
    "pass@1, pass@K and cost per success per combination, regressions first.",
)
def report_command(dirs: tuple[str, ...], out_dir: str | None, compare: str | None) -> None:
    """Rebuild a matrix batch's report from one or more output directories (a run, a merge,
    or the shards' directories together): pass@1 ... pass@K, tasks solved, turns, time, cost
    per success and failure classes per combination, opened by Mermaid charts. Exit code 0,
    2 for a directory that holds no batch or no matrix run."""
    from pathlib import Path

    from oiexec.runner.batch.rebuild import rebuild, write_rebuilt

    rebuilt = rebuild([Path(d) for d in dirs], None if compare is None else Path(compare))
    if out_dir is None:
        click.echo(rebuilt.markdown, nl=False)
        return
    write_rebuilt(rebuilt, Path(out_dir), lambda message: click.echo(message, err=True))


def _out_value(value: str) -> str:
    # An empty path would be taken as the current directory (often the source checkout), and
    # the batch's files and worktrees would land in it.
    if not value:
        raise click.BadParameter("is empty; name the output directory, e.g. --out runs/nightly")
    return value


def _given(ctx: click.Context, name: str) -> bool:
    source = ctx.get_parameter_source(name)
    return source is not None and source.name not in {"DEFAULT", "DEFAULT_MAP"}


def _exec_argv(ctx: click.Context) -> list[str]:
    """The exec options given on this command line, back in command-line form, in the
    order click declares them (stable, so the input hash is too)."""
    argv: list[str] = []
    names = _exec_option_names()
    for param in ctx.command.params:
        if not isinstance(param, click.Option) or param.name not in names:
            continue
        if param.name in _LOCAL or param.name in _PER_TASK or not _given(ctx, param.name):
            continue
        value = ctx.params.get(param.name)
        flag = max(param.opts, key=len)
        if param.is_flag:
            if value:
                argv.append(flag)
        elif param.multiple:
            for item in value or ():
                argv += [flag, str(item)]
        elif value is not None:
            argv += [flag, repr(value) if isinstance(value, float) else str(value)]
    return argv


def _exec_option_names() -> set[str]:
    @exec_options
    def probe(**_: Any) -> None:
        pass

    command = click.command()(probe)
    return {param.name for param in command.params if param.name}
