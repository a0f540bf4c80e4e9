"""Classic Open Interpreter's `execute` {language, code}.

Until the persistent runtimes of `oiexec.tools.interpreters` are wired in, each call runs in
a fresh process of the language's interpreter (state is not kept between calls)."""

from __future__ import annotations

import shlex
import shutil

from oiexec.tools.adapters.base import Invocation, Result, register
from oiexec.tools.adapters.shell import run_command
from oiexec.tools.fs import ToolInputError

#: Language (and aliases) -> interpreter argv prefix taking the code as one argument.
LANGUAGES: dict[str, tuple[str, ...]] = {
    "python": ("python3", "-c"),
    "shell": ("bash", "-c"),
    "javascript": ("node", "-e"),
    "ruby": ("ruby", "-e"),
    "r": ("Rscript", "-e"),
}
ALIASES = {
    "py": "python",
    "bash": "shell",
    "sh": "shell",
    "zsh": "shell",
    "js": "javascript",
    "node": "javascript",
    "rb": "ruby",
    "python3": "python",
}


def canonical_language(name: str) -> str | None:
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    return key if key in LANGUAGES else None


@register("execute")
def execute(inv: Invocation) -> Result:
    raw_language = inv.string("language") or ""
    code = inv.string("code")
    if code is None:
        raise ToolInputError("`code` is required.")
    language = canonical_language(raw_language)
    if language is None:
        known = ", ".join(sorted(LANGUAGES))
        raise ToolInputError(f"Unsupported language {raw_language!r}; use one of: {known}.")
    argv = LANGUAGES[language]
    if language == "python" and shutil.which("python3") is None:
        argv = ("python", "-c")
    if shutil.which(argv[0]) is None:
        raise ToolInputError(f"{language} is not installed on this machine.")
    command = shlex.join([*argv, code]) if language != "shell" else code
    run = run_command(inv.ctx, inv.rt, command, cwd=inv.ctx.cwd, timeout_s=120)
    if run.refused is not None:
        return Result(f"{run.refused}; the code was not run.", True)
    output = run.output.rstrip("\n")
    if run.timed_out:
        output += "\nExecution timed out after 120 seconds and was stopped."
    if run.exit_code not in (0, None) and not output:
        output = f"(exit code {run.exit_code})"
    return Result(output or "No output", run.exit_code != 0)
