"""`execute` {language, code}: code run in the persistent runtimes of
`oiexec.tools.interpreters` (state is kept between calls for the whole run). Each call is a
`command_execution` item, so CI reports see the commands like any other harness's."""

from __future__ import annotations

from oiexec.core.errors import ToolInputError
from oiexec.tools.command import CommandItem, refuse_by_rules
from oiexec.tools.framework import Invocation
from oiexec.tools.interpreters import LANGUAGE_ALIASES, InterpreterPool
from oiexec.tools.options import ExecuteOptions
from oiexec.tools.results import Result

_POOL = "interpreters"


def displayed_command(language: str, code: str) -> str:
    """How an `execute` call appears as a command: shell code as is, other code tagged."""
    return code if language == "shell" else f"{language}:\n{code}"


def execute(inv: Invocation) -> Result:
    raw_language = inv.string("language") or ""
    code = inv.string("code")
    if code is None:
        raise ToolInputError("`code` is required.")
    language = LANGUAGE_ALIASES.get(raw_language.strip().lower())
    if language is None:
        raise ToolInputError(
            f"Unsupported language {raw_language!r}; use python, shell, javascript, ruby or r."
        )
    pool = inv.rt.extras.get(_POOL)
    if not isinstance(pool, InterpreterPool):
        pool = InterpreterPool(inv.ctx)
        inv.rt.extras[_POOL] = pool
    shown = displayed_command(language, code)
    if language == "shell":  # code of other languages has no command words to judge
        refuse_by_rules(inv.ctx, [inv.rt.shell, "-c", code], shown)
    item = CommandItem.start(inv.ctx.items, shown)
    result = pool.run(language, code, inv.opts(ExecuteOptions).timeout_s)
    output = result.output.rstrip("\n")
    if result.error and result.error not in output:
        output = f"{output}\n[{result.error}]".strip()
    item.complete(output, 0 if result.exit_ok else 1, "completed" if result.exit_ok else "failed")
    return Result(output or "No output", not result.exit_ok)
