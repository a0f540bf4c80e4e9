"""`interpreter exec` and its subcommands: parse, build an ExecRequest, delegate."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from oiexec.cli.options import exec_options, merged_params
from oiexec.cli.request import build_request

_DEFAULT = "__prompt__"


class ExecGroup(click.Group):
    """`exec [OPTIONS] [PROMPT]` and `exec resume|fork|review ...` on one command, as in
    Codex: a first argument that is not a subcommand name is the prompt.

    `review` is imported only when named (or listed by `--help`): its options and the review
    machinery behind them are a few milliseconds of every exec run that is not a review."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] != _DEFAULT and self.get_command(ctx, args[0]) is not None:
            return super().resolve_command(ctx, args)
        return _DEFAULT, self.commands[_DEFAULT], args

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name == "review" and "review" not in self.commands:
            from oiexec.cli.review_cmd import exec_review_command

            self.add_command(exec_review_command, "review")
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = set(super().list_commands(ctx)) | {"review"}
        return sorted(names - {_DEFAULT})


@click.group(
    "exec",
    cls=ExecGroup,
    invoke_without_command=True,
    subcommand_metavar="[PROMPT] | resume | fork | review",
)
@exec_options
@click.pass_context
def exec_group(ctx: click.Context, /, **_: Any) -> None:
    """Run the agent non-interactively on PROMPT (or stdin) and exit.

    With --json, stdout carries only JSONL events; otherwise only the final message. Progress
    goes to stderr. Exit codes are listed in docs/exec.md.
    """
    if ctx.invoked_subcommand is None:
        _run(ctx, prompt=None)


@exec_group.command(_DEFAULT, hidden=True)
@exec_options
@click.argument("prompt", required=False)
@click.pass_context
def _prompt_command(ctx: click.Context, /, prompt: str | None, **_: Any) -> None:
    _run(ctx, prompt=prompt)


@exec_group.command("resume")
@exec_options
@click.option("--last", is_flag=True, help="Resume the newest session for this directory.")
@click.option("--all", "all_cwds", is_flag=True, help="With --last: any directory.")
@click.option(
    "--or-new",
    is_flag=True,
    help="With --last: start a new session when there is none to resume (else exit 2).",
)
@click.argument("session_id", required=False)
@click.argument("prompt", required=False)
@click.pass_context
def resume_command(
    ctx: click.Context,
    /,
    session_id: str | None,
    prompt: str | None,
    last: bool,
    all_cwds: bool,
    or_new: bool,
    **_: Any,
) -> None:
    """Continue a session: SESSION_ID, or --last for the newest one here.

    The run is made as the session's was (model, provider, harness, sandbox, writable roots,
    directory, reasoning effort, output schema); flags and -c given now override, and each
    override is announced. Also installed as the top-level `interpreter resume`.
    """
    _resume(ctx, session_id, prompt, last=last, all_cwds=all_cwds, or_new=or_new)


@exec_group.command("fork")
@exec_options
@click.argument("session_id")
@click.argument("prompt", required=False)
@click.pass_context
def fork_command(ctx: click.Context, /, session_id: str, prompt: str | None, **_: Any) -> None:
    """Start a new session from a copy of SESSION_ID's history, made as its run was."""
    _execute(ctx, prompt, append_stdin=False, fork_from=session_id)


def _resume(
    ctx: click.Context,
    session_id: str | None,
    prompt: str | None,
    *,
    last: bool,
    all_cwds: bool,
    or_new: bool,
) -> None:
    from oiexec.runner.request import ResumeTarget

    if last and session_id is not None and prompt is None:
        # With --last a lone positional is the prompt.
        session_id, prompt = None, session_id
    target = ResumeTarget(session_id=session_id, last=last, all_cwds=all_cwds, or_new=or_new)

    def check() -> None:
        from oiexec.core.errors import UsageError

        if not last and session_id is None:
            raise UsageError("exec resume needs a SESSION_ID or --last")
        if (all_cwds or or_new) and not last:
            raise UsageError("--all and --or-new only apply to `resume --last`")

    _execute(ctx, prompt, append_stdin=False, check=check, resume=target)


def _run(ctx: click.Context, prompt: str | None) -> None:
    _execute(ctx, prompt, append_stdin=True)


def _execute(
    ctx: click.Context,
    prompt: str | None,
    *,
    append_stdin: bool,
    check: Callable[[], None] | None = None,
    **extra: Any,
) -> None:
    """Checks, then runs; the prompt is read from stdin only once everything that can be
    checked without it has passed. Once the flags parsed, every exit writes the reports."""
    from oiexec.cli.failure_line import json_failure
    from oiexec.cli.prompt import PromptSource
    from oiexec.cli.request import report_paths
    from oiexec.runner.ci_report import ci_reporting
    from oiexec.runner.exec import run_exec
    from oiexec.runner.failure_reports import reports_on_failure
    from oiexec.runner.signals import interrupt_signals

    params = merged_params(ctx)
    source = PromptSource(prompt, append_stdin, optional=bool(params.get("from_junit")))
    # The JUnit case is named after the prompt; before stdin is read only the argument is known.
    name = prompt if prompt and prompt != "-" else "exec"
    # With --json, a failure before the run starts its stream still ends it (turn.failed).
    with json_failure(params) as failure:
        paths = report_paths(params)
        reporting = reports_on_failure(
            paths, kind="exec", name=name, model=params.get("model") or ""
        )
        # In GitHub Actions: `::error` and the step summary on every exit from here on.
        with ci_reporting(paths) as ci, interrupt_signals(), reporting as reports:
            if check is not None:
                check()
            source.check()
            request = build_request(params, "", **extra)
            result = run_exec(
                request,
                prompt=source.read,
                reports=reports,
                processor=failure.processor(),
                ci=ci,
            )
    ctx.exit(int(result.exit_code))
