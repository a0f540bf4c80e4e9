"""The `interpreter` command line (also installed as `oiexec` and `i`).

Only click is imported up front, so `--version` and `--help` stay fast; each command imports
what it needs when it runs.
"""

from __future__ import annotations

import os
import sys
from typing import ClassVar

import click

from oiexec.core.version import __version__


class _LazyGroup(click.Group):
    """Subcommands are imported only when used."""

    _lazy: ClassVar[dict[str, tuple[str, str]]] = {
        "exec": ("oiexec.cli.exec_cmd", "exec_group"),
        "resume": ("oiexec.cli.exec_cmd", "resume_command"),
        "review": ("oiexec.cli.review_cmd", "review_command"),
        "config": ("oiexec.cli.config_cmd", "config_group"),
        "sandbox": ("oiexec.cli.sandbox_cmd", "sandbox_group"),
        "harness": ("oiexec.cli.harness_cmd", "harness_group"),
        "batch": ("oiexec.cli.batch_cmd", "batch_group"),
        "sessions": ("oiexec.cli.sessions_cmd", "sessions_group"),
        "models": ("oiexec.cli.models_cmd", "models_group"),
        "mcp": ("oiexec.cli.mcp_cmd", "mcp_group"),
        "mcp-server": ("oiexec.cli.mcp_server_cmd", "mcp_server_command"),
    }
    _aliases: ClassVar[dict[str, str]] = {"e": "exec"}

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        _refuse_undecodable(args)
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(self._lazy)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        name = self._aliases.get(cmd_name, cmd_name)
        if name not in self._lazy:
            return None
        import importlib

        module_name, attr = self._lazy[name]
        command: click.Command = getattr(importlib.import_module(module_name), attr)
        return command


def _refuse_undecodable(args: list[str]) -> None:
    """An argument that is not UTF-8 (Python holds its bytes as lone surrogates) is a usage
    error, as in Codex: such text cannot be sent to a model, written to JSON or put in a
    header, and would fail there instead."""
    for number, arg in enumerate(args, start=1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            shown = arg.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            raise click.UsageError(
                f"argument {number} is not valid UTF-8: `{shown[:80]}`; pass text and paths "
                "as UTF-8"
            ) from None


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="interpreter")
def cli() -> None:
    """oiexec: run coding-agent tasks headless, in CI and pipelines."""


def main() -> None:
    """Entry point: map every error to its documented exit code, never a traceback."""
    from oiexec.core.errors import ExitCode, Interrupted, OiexecError

    try:
        code = cli.main(prog_name="interpreter", standalone_mode=False)
    except OiexecError as exc:
        click.echo(f"Error: {exc.render()}", err=True)
        code = int(exc.exit_code)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.ClickException as exc:
        exc.show()
        code = ExitCode.USAGE if isinstance(exc, click.UsageError) else exc.exit_code
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        code = ExitCode.INTERRUPTED
    except Interrupted as exc:
        click.echo(str(exc), err=True)
        code = exc.exit_code
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        code = ExitCode.INTERRUPTED
    except BrokenPipeError:
        # The reader went away (e.g. `| head`); nothing useful can be written any more.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = ExitCode.FAILED
    except Exception as exc:
        if os.environ.get("OIEXEC_DEBUG"):
            raise
        click.echo(
            f"internal error: {type(exc).__name__}: {exc}\n"
            "This is a bug in oiexec. Re-run with OIEXEC_DEBUG=1 for the traceback and report it.",
            err=True,
        )
        code = ExitCode.FAILED
    sys.exit(int(code or 0))
