"""What hooks and `notify` may start and see: they run outside the sandbox, as the user, with
the workspace as their working directory, so nothing a sandboxed command wrote may choose
the program they run, and they get no credential config did not pass them.

* The program a hook's shell command starts (each simple command's first word, and the
  script an interpreter such as `sh`, `python` or `node` is given) is refused when it lies in
  the workspace or a writable root (`./ci/guard.sh`, `python ci/check.py`), or PATH finds it
  there first (an activated `.venv/bin`): oiexec.core.programs decides, as for git.
* Package runners that prefer the workspace's own copy (`npx`, `bunx`, `pnpx`, `npm exec`,
  `pnpm exec`/`dlx`, `yarn exec`/`dlx`) are refused outright: `npx -y tool` runs
  `./node_modules/.bin/tool` when there is one.
* PATH loses its relative entries and those inside an untrusted root; `PYTHONSAFEPATH=1`
  keeps `python -m pkg` and `python -c` from importing modules out of the workspace.
* Variables that look like credentials (oiexec.core.redact: `*KEY*`, `*TOKEN*`, ..., or
  holding a registered secret such as the provider key) are removed unless config names
  them (`hooks_env_vars`, `notify_env_vars`).

A hook that reads project files as code (`make`, `npm test`, `pytest` loading conftest.py)
still runs what the model wrote: such checks belong inside the sandbox (`--check`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from oiexec.core import programs
from oiexec.core.redact import looks_secret, redact
from oiexec.core.shell_split import simple_commands

__all__ = ["argv_refusal", "command_refusal", "outside_env"]

#: Shell words that are not programs (the next word may be one).
_KEYWORDS = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until",
                       "!", "{", "}", "time"})  # fmt: skip
#: Words that run the rest of the command as a program.
_WRAPPERS = frozenset({"exec", "command", "nohup", "env", "nice", "timeout", "xargs"})
#: Builtins and words after which checking stops (no program of their own).
_SKIPPED = frozenset({"for", "case", "select", "function"})
_SOURCE = frozenset({".", "source"})
#: Interpreters whose first operand is a script they run (unless -c/-e/-m says otherwise).
_INTERPRETERS = ("sh", "bash", "dash", "zsh", "ksh", "python", "node", "perl", "ruby", "php",
                 "deno", "bun", "tsx", "ts-node", "lua", "Rscript")  # fmt: skip
_INLINE = frozenset({"-c", "-e", "-m", "--eval", "-p", "--print", "-E", "eval"})
_VARIABLE = re.compile(r"\$(?:(\w+)|\{(\w+)\})")
_RUNNERS = {"npx": None, "bunx": None, "pnpx": None, "npm": {"exec", "x"},
            "pnpm": {"exec", "dlx"}, "yarn": {"exec", "dlx"}}  # fmt: skip


def outside_env(environ: Mapping[str, str], passed: Sequence[str] = ()) -> dict[str, str]:
    """`environ` without credentials (unless `passed` names them), PATH without entries a
    sandboxed command could write, and `PYTHONSAFEPATH=1`."""
    wanted = set(passed)
    env: dict[str, str] = {}
    for name, value in environ.items():
        if name not in wanted and (looks_secret(name) or redact(value) != value):
            continue
        env[name] = value
    if "PATH" in env:
        env["PATH"] = programs.trusted_path_value(env["PATH"])
    env["PYTHONSAFEPATH"] = "1"
    return env


def _interpreter(word: str) -> bool:
    name = os.path.basename(word)
    return any(
        name == base or (name.startswith(base) and name[len(base) :].replace(".", "").isdigit())
        for base in _INTERPRETERS
    )


def _script_refusal(words: list[str], cwd: Path) -> str | None:
    """The script an interpreter runs (its first operand), judged by where it lies."""
    for word in words[1:]:
        if word in _INLINE:
            return None
        if word.startswith("-"):
            continue
        path = Path(word) if os.path.isabs(word) else cwd / word
        holder = programs.untrusted_holder(path)
        if holder is None:
            return None
        return (
            f"`{words[0]}` would run the script `{word}`, inside {holder}, which sandboxed "
            "commands can write, outside the sandbox; give the absolute path of a script "
            "kept outside the workspace"
        )
    return None


def argv_refusal(argv: Sequence[str], cwd: Path, path_value: str) -> str | None:
    """Why the program `argv` names may not be started outside the sandbox, or None.
    `~` and `$VAR` are expanded as the shell would (from this process's environment, with
    `$PWD` the command's `cwd`)."""
    variables = {**os.environ, "PWD": str(cwd)}

    def expand(word: str) -> str:
        word = _VARIABLE.sub(lambda m: variables.get(m.group(1) or m.group(2), ""), word)
        return os.path.expanduser(word)

    words = [expand(word) for word in argv]
    while words and (words[0] in _KEYWORDS or _assignment(words[0])):
        words.pop(0)
    if words and os.path.basename(words[0]) in _WRAPPERS:
        rest = [w for w in words[1:] if not w.startswith("-") and not _assignment(w)]
        if os.path.basename(words[0]) == "timeout":
            rest = rest[1:]  # the duration
        return argv_refusal(rest, cwd, path_value) if rest else None
    if not words or words[0] in _SKIPPED:
        return None
    first = words[0]
    if first in _SOURCE:
        return _script_refusal(words, cwd)
    runner = os.path.basename(first)
    if runner in _RUNNERS:
        verbs = _RUNNERS[runner]
        if verbs is None or (len(words) > 1 and words[1] in verbs):
            return (
                f"`{' '.join(words[:2])}` runs a package from the workspace's node_modules "
                "when it has one, outside the sandbox; give the absolute path of the "
                "installed program instead"
            )
    _, refusal = programs.judge_program(first, cwd=cwd, path_value=path_value)
    if refusal is not None:
        return refusal
    return _script_refusal(words, cwd) if _interpreter(first) else None


def _assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    return bool(eq) and name.isidentifier()


def command_refusal(command: str, cwd: Path, path_value: str) -> str | None:
    """Why the shell command `command` (a hook) may not run outside the sandbox, or None:
    the first refusal among its simple commands."""
    try:
        commands = simple_commands(command)
    except ValueError as exc:
        return f"cannot be checked ({exc}); write it as plain commands"
    for simple in commands:
        refusal = argv_refusal(simple, cwd, path_value)
        if refusal is not None:
            return refusal
    return None
