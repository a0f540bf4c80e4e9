"""`interpreter sandbox`: run one command under the sandbox policy, or diagnose the host.

    interpreter sandbox [-s MODE] [--backend B] [--add-dir DIR] [-C DIR] [--network] -- CMD ARGS...
    interpreter sandbox doctor [-s MODE] [--backend B] [--require auto|full|any] [--json]

`sandbox -- CMD` exits with CMD's status, 127 when CMD does not exist, 6 when the sandbox is
unavailable, 125 when it could not be set up; `doctor` prints its report on stdout.

Only click and the policy types are imported at module level, so `--help` stays fast; the
runner builds the policy and supervises the command.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, get_args

import click

from oiexec.core.policy import SANDBOX_MODES, BackendChoice, RequireChoice, SandboxMode

F = TypeVar("F", bound=Callable[..., Any])


class _SandboxGroup(click.Group):
    """Everything after `--` is the command to run; `doctor` is the only subcommand."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args and (not args or args[0] != "doctor"):
            cut = args.index("--")
            ctx.meta["sandbox_command"] = args[cut + 1 :]
            args = args[:cut]
        return super().parse_args(ctx, args)


_backend_option = click.option(
    "--backend",
    type=click.Choice(get_args(BackendChoice)),
    default="auto",
    show_default=True,
    help="Linux backend (as sandbox_backend): bwrap when it works, else Landlock.",
)
_require_option = click.option(
    "--require",
    type=click.Choice(get_args(RequireChoice)),
    default="auto",
    show_default=True,
    help='"full" refuses the degraded Landlock backend; "auto" is "full" as root.',
)


def _mode_option(default: SandboxMode, what: str) -> Callable[[F], F]:
    """`-s/--sandbox MODE`, for running a command or for the doctor's check."""
    return click.option(
        "-s",
        "--sandbox",
        "mode",
        type=click.Choice(SANDBOX_MODES),
        default=default,
        show_default=True,
        help=what,
    )


def _limit_option(flag: str, default: int, what: str) -> Callable[[F], F]:
    """A resource limit of the sandboxed command; 0 lifts it."""
    return click.option(
        flag,
        type=click.IntRange(min=0),
        default=default,
        show_default=True,
        help=f"{what} (0: unlimited).",
    )


@click.group(
    "sandbox",
    cls=_SandboxGroup,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@_mode_option("read-only", "Sandbox mode for the command.")
@click.option(
    "--add-dir",
    "add_dirs",
    multiple=True,
    type=click.Path(file_okay=False),
    help="Extra writable root (workspace-write).",
)
@click.option(
    "-C",
    "--cd",
    "cwd",
    type=click.Path(file_okay=False, exists=True),
    help="Working directory (the workspace).",
)
@click.option("--network", is_flag=True, help="Allow network in workspace-write.")
@_require_option
@_backend_option
@_limit_option("--max-processes", 1024, "Processes the command may have at once")
@_limit_option("--max-file-size-mb", 1024, "Largest file the command may write, in MiB")
@_limit_option("--max-cpu-seconds", 3600, "CPU seconds per process")
@click.pass_context
def sandbox_group(
    ctx: click.Context,
    mode: SandboxMode,
    add_dirs: tuple[str, ...],
    cwd: str | None,
    network: bool,
    require: RequireChoice,
    backend: BackendChoice,
    max_processes: int,
    max_file_size_mb: int,
    max_cpu_seconds: int,
) -> None:
    """Run CMD under the sandbox: `interpreter sandbox -s workspace-write -- CMD ARGS...`.

    Exits with CMD's status: 127 when CMD does not exist, 6 when the sandbox is unavailable
    here (see `interpreter sandbox doctor`), 125 when it could not be set up.
    """
    if ctx.invoked_subcommand is not None:
        return
    command: list[str] = ctx.meta.get("sandbox_command") or []
    if not command:
        raise click.UsageError("give the command after `--`, e.g. `interpreter sandbox -- ls`")
    from oiexec.core.policy import SandboxLimits
    from oiexec.runner.sandbox_command import flag_policy, run_sandboxed

    policy = flag_policy(
        mode,
        Path(cwd or os.getcwd()).resolve(),
        add_dirs=add_dirs,
        network=network,
        require=require,
        backend=backend,
        limits=SandboxLimits.from_config(max_processes, max_file_size_mb, max_cpu_seconds),
    )
    ctx.exit(run_sandboxed(policy, command, lambda text: click.echo(text, err=True)))


@sandbox_group.command("doctor")
@_mode_option("workspace-write", "The mode to check.")
@_require_option
@_backend_option
@click.option("--network", is_flag=True, help="Check workspace-write with network on.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON on stdout.")
@click.option("-C", "--cd", "cwd", type=click.Path(file_okay=False, exists=True))
def doctor_command(
    mode: SandboxMode,
    require: RequireChoice,
    backend: BackendChoice,
    network: bool,
    as_json: bool,
    cwd: str | None,
) -> None:
    """Which backend would be used and why, what it enforces, what is degraded, how to fix.

    The report goes to stdout; the exit code is 6 when the mode cannot be enforced here.
    """
    from oiexec.core.errors import OiexecError
    from oiexec.runner.sandbox_command import flag_policy
    from oiexec.sandbox.doctor import render_report, run_doctor

    workdir = Path(cwd or os.getcwd()).resolve()
    policy = flag_policy(mode, workdir, network=network, require=require, backend=backend)
    try:
        report = run_doctor(policy)
    except OiexecError as exc:
        click.echo(exc.render(), err=True)
        sys.exit(int(exc.exit_code))
    from oiexec.runner.outside_sandbox import unsandboxed_report

    report.update(unsandboxed_report(workdir))
    from oiexec.runner.programs import programs_report

    report["programs"] = programs_report(policy)
    # The report is the command's output, on stdout either way; the exit code says whether
    # the mode can be enforced, and stderr is left for errors.
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        click.echo(render_report(report))
        for key in ("programs", "mcp", "hooks", "notify"):
            click.echo(f"{key + ':':<10}{report[key]['note']}")
    sys.exit(0 if report["ok"] else 6)


if __name__ == "__main__":
    sandbox_group(prog_name="interpreter sandbox")
