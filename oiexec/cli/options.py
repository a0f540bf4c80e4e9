"""The exec options, Codex's names first, then the pipeline additions.

They are attached to `exec` and to each of its subcommands, because Codex accepts most of them
on either side of `resume <id>`; `merged_params` reconciles the two.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

from oiexec.core.numbers import COUNT, POSITIVE, SECONDS, NumberRange
from oiexec.core.policy import SANDBOX_MODES

F = TypeVar("F", bound=Callable[..., Any])

#: A report file: never read, so not checked for reading; whether it can take a report (not a
#: FIFO, a socket or a directory) is decided when it is opened (runner/reports), which also
#: writes the other reports saying why the run stopped.
REPORT_PATH = click.Path(readable=False, path_type=str)


class NumberParam(click.ParamType[int | float]):
    """A numeric flag in a range of `oiexec.core.numbers` (the config keys of the same meaning
    use the same range): `--timeout inf`, `--max-cost nan` and negatives are usage errors
    (exit 2) naming the flag, the value and what is allowed."""

    def __init__(self, allowed: NumberRange, metavar: str) -> None:
        self.allowed = allowed
        self.name = metavar.lower()
        self._metavar = metavar

    def get_metavar(self, param: click.Parameter, *args: Any, **kwargs: Any) -> str:
        return self._metavar

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            if isinstance(value, str):
                return self.allowed.parse(value)
            return self.allowed.check(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


#: At least 1: turns, attempts, tokens, jobs.
COUNT_PARAM = NumberParam(COUNT, "N")


def _feature_switch(flag: str, dest: str, value: str) -> Callable[[F], F]:
    """`--enable`/`--disable FEATURE`: shorthands for `-c features.FEATURE=true|false`."""
    return click.option(
        flag, dest, multiple=True, metavar="FEATURE", help=f"Same as -c features.FEATURE={value}."
    )


_EXEC_OPTIONS: list[Callable[[Any], Any]] = [
    click.option(
        "-c",
        "--config",
        "config_overrides",
        multiple=True,
        metavar="KEY=VALUE",
        help="Override a config value (dotted key; the value is parsed as TOML).",
    ),
    _feature_switch("--enable", "enable_features", "true"),
    _feature_switch("--disable", "disable_features", "false"),
    click.option(
        "--strict-config",
        is_flag=True,
        help="Treat unknown config keys, and keys that have no effect in exec, as errors (exit 3).",
    ),
    click.option("-m", "--model", help="Model to use."),
    click.option("--oss", is_flag=True, help="Use a local open-source provider (ollama)."),
    click.option(
        "--local-provider",
        type=click.Choice(["ollama", "lmstudio"]),
        help="Local provider for --oss.",
    ),
    click.option(
        "--chat-completions",
        is_flag=True,
        help="Talk to the provider over the Chat Completions wire.",
    ),
    click.option("-p", "--profile", help="Config profile ([profiles.NAME] or NAME.config.toml)."),
    click.option(
        "-s",
        "--sandbox",
        "sandbox_mode",
        type=click.Choice(SANDBOX_MODES),
        help="Sandbox for model-run commands.",
    ),
    click.option(
        "-a",
        "--ask-for-approval",
        "approval",
        metavar="POLICY",
        help="Accepted for compatibility; exec always uses `never`.",
    ),
    click.option(
        "--dangerously-bypass-approvals-and-sandbox",
        "--yolo",
        "bypass",
        is_flag=True,
        help="Run commands without any sandbox. Only inside an isolated container.",
    ),
    click.option(
        "-C",
        "--cd",
        "cd",
        type=click.Path(file_okay=False, path_type=str),
        help="Working directory of the agent.",
    ),
    click.option(
        "--add-dir",
        "add_dirs",
        multiple=True,
        type=click.Path(path_type=str),
        help="Extra writable directory (repeatable).",
    ),
    click.option(
        "--skip-git-repo-check", is_flag=True, help="Allow running outside a git repository."
    ),
    click.option("--ephemeral", is_flag=True, help="Do not write a session rollout."),
    click.option(
        "--ignore-rules",
        is_flag=True,
        help="Do not apply command rules (rules/*.rules in the config home and the project).",
    ),
    click.option("--json", "json_mode", is_flag=True, help="Print JSONL events on stdout."),
    click.option("--experimental-json", "experimental_json", is_flag=True, hidden=True),
    click.option(
        "-o",
        "--output-last-message",
        "last_message_file",
        type=REPORT_PATH,
        metavar="FILE",
        help="Write the final message to FILE (only after a completed turn).",
    ),
    click.option(
        "--output-schema",
        type=click.Path(dir_okay=False, path_type=str),
        help="JSON Schema the final message must match.",
    ),
    click.option(
        "--color",
        type=click.Choice(["always", "never", "auto"]),
        default="auto",
        show_default=True,
        help="Colour on stderr.",
    ),
    click.option(
        "-i",
        "--image",
        "images",
        multiple=True,
        type=click.Path(path_type=str),
        help="Attach an image to the prompt (repeatable).",
    ),
    click.option(
        "--junit",
        "junit_file",
        type=REPORT_PATH,
        metavar="FILE",
        help="Write a JUnit XML report of the run.",
    ),
    click.option(
        "--diff",
        "diff_file",
        type=REPORT_PATH,
        metavar="FILE",
        help="Write the change made by the run as a patch `git apply` accepts.",
    ),
    click.option(
        "--max-turns",
        type=COUNT_PARAM,
        help="Fail (exit 4) if the model needs more than N model turns.",
    ),
    click.option(
        "--timeout",
        "timeout_s",
        type=NumberParam(SECONDS, "SECONDS"),
        metavar="SECONDS",
        help="Fail (exit 5) if the run takes longer.",
    ),
    click.option(
        "--max-tokens",
        type=COUNT_PARAM,
        metavar="N",
        help="Fail (exit 9) once the run has used more than N tokens (input + output).",
    ),
    click.option(
        "--max-cost",
        type=NumberParam(POSITIVE, "USD"),
        metavar="USD",
        help="Fail (exit 10) once the run has cost more than USD at the model's price.",
    ),
    click.option(
        "--stall-turns",
        type=COUNT_PARAM,
        metavar="N",
        help="Fail (exit 12) once the run repeats a failing command N times, or makes N "
        "turns in a row without progress (default: `stall_turns`, else off).",
    ),
    click.option(
        "--check",
        "check",
        metavar="CMD",
        callback=lambda _ctx, _param, value: _non_blank(value),
        help="Run CMD in the sandbox when the model says it is done; while it fails, the "
        "model gets its output and goes on. Fail (exit 8) if it still fails.",
    ),
    click.option(
        "--from-junit",
        "from_junit",
        multiple=True,
        type=click.Path(dir_okay=False, path_type=str),
        metavar="FILE",
        help="Fix what a JUnit XML report (pytest, Jest, Go, Maven...) says failed: its "
        "failing tests go into the prompt (PROMPT is then optional), and without --check "
        "the check reruns them (pytest, Jest). Repeatable.",
    ),
    click.option(
        "--max-attempts",
        type=COUNT_PARAM,
        metavar="N",
        help="How many times --check may run (default 3, or `check_max_attempts`).",
    ),
    click.option(
        "--require-change/--no-require-change",
        "require_change",
        default=False,
        help="Fail (exit 11) if the run ends without changing any file (an empty diff).",
    ),
    click.option(
        "--append-system-prompt",
        "append_system_prompt",
        metavar="TEXT|@FILE",
        callback=lambda _ctx, _param, value: _text_or_file(value),
        help="Add TEXT (or the text of FILE) to the instructions, after the harness's own "
        "prompt, where its product puts such text.",
    ),
    click.option("--thread-source", hidden=True),
    click.option("--cyber-access-program", hidden=True),
]


def _non_blank(value: str | None) -> str | None:
    # A blank command would "pass" without checking anything.
    if value is not None and not value.strip():
        raise click.BadParameter("must be a shell command such as `pytest -q`, not blank")
    return value


def _text_or_file(value: str | None) -> str | None:
    """`--append-system-prompt`: blank text is refused; `@FILE` becomes `@` and the file's
    absolute path, so a batch task or a resumed run started elsewhere reads the same file
    (it is read when the run starts: runner/instructions)."""
    if value is None:
        return None
    if not value.startswith("@"):
        if not value.strip():
            raise click.BadParameter("needs text to append (or @FILE), not a blank string")
        return value
    if not value[1:].strip():
        raise click.BadParameter("`@` must be followed by a file name, e.g. @prompts/ci.md")
    return "@" + os.path.abspath(os.path.expanduser(value[1:]))


def exec_options(func: F) -> F:
    for option in reversed(_EXEC_OPTIONS):
        func = option(func)
    return func


def merged_params(ctx: click.Context) -> dict[str, Any]:
    """The subcommand's options, falling back to the ones given before the subcommand."""
    params = dict(ctx.params)
    parent = ctx.parent
    while parent is not None and parent.command.name in {"exec", "e"}:
        for name, value in parent.params.items():
            mine = params.get(name)
            if isinstance(value, tuple) and isinstance(mine, tuple):
                params[name] = (*value, *mine)
                continue
            source = ctx.get_parameter_source(name)
            if name not in params or source is None or source.name in {"DEFAULT", "DEFAULT_MAP"}:
                params[name] = value
        parent = parent.parent
    return params
