"""`interpreter exec` and its subcommands: parse, build an ExecRequest, delegate."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from oiexec.cli.options import exec_options, merged_params
from oiexec.cli.review_cmd import exec_review_command

_DEFAULT = "__prompt__"


class ExecGroup(click.Group):
    """`exec [OPTIONS] [PROMPT]` and `exec resume|fork ...` on one command, as in Codex: a
    first argument that is not a subcommand name is the prompt."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] in self.commands and args[0] != _DEFAULT:
            return super().resolve_command(ctx, args)
        return _DEFAULT, self.commands[_DEFAULT], args

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name in super().list_commands(ctx) if name != _DEFAULT]


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
    goes to stderr. Exit codes are listed in the README.
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
    **_: Any,
) -> None:
    """Continue a session: SESSION_ID, or --last for the newest one here.

    Also installed as the top-level `interpreter resume`.
    """
    _resume(ctx, session_id, prompt, last, all_cwds)


@exec_group.command("fork")
@exec_options
@click.argument("session_id")
@click.argument("prompt", required=False)
@click.pass_context
def fork_command(ctx: click.Context, /, session_id: str, prompt: str | None, **_: Any) -> None:
    """Start a new session from a copy of SESSION_ID's history."""
    from oiexec.cli.prompt import resolve_prompt

    text = resolve_prompt(prompt, append_stdin=False)
    _execute(ctx, text, fork_from=session_id)


exec_group.add_command(exec_review_command, "review")


def _resume(
    ctx: click.Context, session_id: str | None, prompt: str | None, last: bool, all_cwds: bool
) -> None:
    from oiexec.cli.prompt import resolve_prompt
    from oiexec.core.errors import UsageError
    from oiexec.runner.request import ResumeTarget

    if last and session_id is not None and prompt is None:
        # With --last a lone positional is the prompt.
        session_id, prompt = None, session_id
    if not last and session_id is None:
        raise UsageError("exec resume needs a SESSION_ID or --last")
    text = resolve_prompt(prompt, append_stdin=False)
    _execute(ctx, text, resume=ResumeTarget(session_id=session_id, last=last, all_cwds=all_cwds))


def _run(ctx: click.Context, prompt: str | None) -> None:
    from oiexec.cli.prompt import resolve_prompt

    _execute(ctx, resolve_prompt(prompt))


def _execute(ctx: click.Context, prompt: str, **extra: Any) -> None:
    from oiexec.runner.exec import run_exec

    request = build_request(merged_params(ctx), prompt, **extra)
    result = run_exec(request)
    ctx.exit(int(result.exit_code))


def build_request(params: dict[str, Any], prompt: str, **extra: Any) -> Any:
    from oiexec.config.loader import ConfigInputs
    from oiexec.core.errors import UsageError
    from oiexec.runner.request import ExecRequest

    cwd = Path(params["cd"]).expanduser() if params.get("cd") else Path.cwd()
    if not cwd.is_dir():
        raise UsageError(f"--cd {cwd}: no such directory")
    cwd = Path(os.path.abspath(cwd))
    warnings: list[str] = []
    if params.get("approval") and params["approval"] != "never":
        warnings.append(
            f"exec always runs with approval policy `never`; ignoring -a {params['approval']}"
        )
    overrides = [
        *(f"features.{f}=true" for f in params.get("enable_features", ())),
        *(f"features.{f}=false" for f in params.get("disable_features", ())),
        *params.get("config_overrides", ()),
    ]
    flags: dict[str, Any] = {
        "model": params.get("model"),
        "sandbox_mode": params.get("sandbox_mode"),
    }
    if params.get("oss") or params.get("local_provider"):
        flags["model_provider"] = params.get("local_provider") or "ollama"
    if params.get("chat_completions"):
        flags["chat_completions"] = True

    def path_of(key: str) -> Path | None:
        value = params.get(key)
        return Path(value).expanduser() if value else None

    return ExecRequest(
        prompt=prompt,
        cwd=cwd,
        config=ConfigInputs(
            cwd=cwd,
            profile=params.get("profile"),
            overrides=tuple(overrides),
            flags=flags,
            forced={"approval_policy": "never"},
            strict=bool(params.get("strict_config")),
        ),
        images=tuple(Path(p).expanduser() for p in params.get("images", ())),
        add_dirs=tuple(
            Path(os.path.abspath(Path(p).expanduser())) for p in params.get("add_dirs", ())
        ),
        skip_git_repo_check=bool(params.get("skip_git_repo_check")),
        ephemeral=bool(params.get("ephemeral")),
        json=bool(params.get("json_mode") or params.get("experimental_json")),
        color=params.get("color") or "auto",
        output_last_message=path_of("last_message_file"),
        output_schema=path_of("output_schema"),
        junit=path_of("junit_file"),
        diff=path_of("diff_file"),
        max_turns=params.get("max_turns"),
        timeout=params.get("timeout_s"),
        dangerously_bypass=bool(params.get("bypass")),
        warnings=tuple(warnings),
        **extra,
    )
