"""Classic Open Interpreter's `execute` {language, code}, run in the persistent runtimes of
`oiexec.tools.interpreters` (state is kept between calls for the whole run). Each call is a
`command_execution` item, so CI reports see the commands like any other harness's."""

from __future__ import annotations

from oiexec.core.errors import ToolInputError
from oiexec.core.events import CommandExecutionItem
from oiexec.tools.adapters.base import Invocation, Result, register
from oiexec.tools.interpreters import DEFAULT_TIMEOUT, LANGUAGE_ALIASES, InterpreterPool

_POOL = "interpreters"


def displayed_command(language: str, code: str) -> str:
    """How an `execute` call appears as a command: shell code as is, other code tagged."""
    return code if language == "shell" else f"{language}:\n{code}"


@register("execute")
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
    items = inv.ctx.items
    item_id = items.next_id()
    shown = displayed_command(language, code)
    items.started(CommandExecutionItem(id=item_id, command=shown))
    timeout = float(inv.option("timeout_s", DEFAULT_TIMEOUT))
    result = pool.run(language, code, timeout)
    output = result.output.rstrip("\n")
    if result.error and result.error not in output:
        output = f"{output}\n[{result.error}]".strip()
    items.completed(
        CommandExecutionItem(
            id=item_id,
            command=shown,
            aggregated_output=output,
            exit_code=0 if result.exit_ok else 1,
            status="completed" if result.exit_ok else "failed",
        )
    )
    return Result(output or "No output", not result.exit_ok)
