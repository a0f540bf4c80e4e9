"""Judging a command by the run's rules before it starts.

A command is judged by each simple command it would run: the words of a shell's `-c`
script (`bash -lc 'make && git push'`) split at its operators (oiexec/core/shell_split.py),
the scripts of `eval`, nested shells and command substitutions, and the command behind a
leading `VAR=value`, a keyword (`if`, `do`, `!`, ...) or a wrapper that runs the rest of its
words (`env`, `nohup`, `timeout 5`, `sudo`, `xargs`, ...). A script that cannot be split
(an unclosed quote) is judged by its leading words, so `git push "oops` is still refused.
The strictest rule matched anywhere in the line decides for the whole line.

Rules are a policy, not a sandbox: a command that builds its words at run time (`$cmd`,
a script file) is not seen here. The sandbox still confines everything that runs.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from oiexec.core.shell_split import simple_commands
from oiexec.tools.rules.model import PrefixRule, strictest

__all__ = ["RuleSet"]

#: How deep nested scripts and wrappers (`bash -c "eval 'sh -c ...'"`) are followed, and how
#: much nested script text one command may hold in all; a command past either is refused
#: while any rule refuses something, as one that cannot be judged.
_MAX_DEPTH = 8
_NESTED_TEXT = 256 * 1024
_TOO_COMPLEX = (
    "The command was not run: it nests too many scripts (sh -c, eval, wrappers) to be "
    "checked against the run's command rules. Run its commands directly."
)
_SHELL = re.compile(r"(?:ba|da|z|k|mk|a|)sh\Z")
_KEYWORDS = frozenset({"!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done",
                       "while", "until", "time", "coproc"})  # fmt: skip
#: Programs that run the rest of their words as a command, and their options that take a
#: value as the next word.
_WRAPPERS: dict[str, frozenset[str]] = {
    "env": frozenset({"-u", "--unset", "-C", "--chdir"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "exec": frozenset({"-a"}),
    "nohup": frozenset(),
    "setsid": frozenset(),
    "nice": frozenset({"-n", "--adjustment"}),
    "timeout": frozenset({"-s", "--signal", "-k", "--kill-after"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "sudo": frozenset({"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T"}),
    "doas": frozenset({"-u", "-C"}),
    "xargs": frozenset({"-a", "-d", "-E", "-e", "-I", "-i", "-L", "-l", "-n", "-P", "-s"}),
}
#: Shell options that take a value (`bash -o pipefail -c ...`).
_SHELL_VALUE_OPTIONS = frozenset({"-o", "+o", "-O", "+O"})
_OPERATOR_CHARS = re.compile(r"[;&|()<>\n]")


def _assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    return bool(eq) and name.isidentifier()


def _shell_script(words: Sequence[str]) -> str | None:
    """The script of `sh -c SCRIPT` (any `-c` spelling: `-lc`, `-ec`), or None."""
    inline = False
    skip = False
    for word in words[1:]:
        if skip:
            skip = False
        elif word in _SHELL_VALUE_OPTIONS:
            skip = True
        elif word == "--":
            continue
        elif word[:1] in "-+" and len(word) > 1 and not word.startswith("--"):
            inline = inline or "c" in word[1:]
        else:
            return word if inline else None
    return None


def _unwrapped(program: str, words: Sequence[str]) -> list[str]:
    """What a wrapper runs: its words after its options (and their values), assignments
    (`env X=1 ...`) and, for `timeout`, the duration."""
    takes_value = _WRAPPERS[program]
    rest = list(words[1:])
    while rest:
        word = rest[0]
        if word in takes_value:
            del rest[:2]
        elif word.startswith("-") or _assignment(word):
            del rest[:1]
        else:
            break
    if program == "timeout" and rest:
        del rest[:1]  # the duration
    return rest


class _TooComplex(Exception):
    """Scripts nested deeper, or longer in all, than a command is judged through."""


class _Walk:
    """One command's judging: how deep nested scripts may go and how much of their text may
    still be split (each nested script is split anew, so `eval eval ... git push` would
    otherwise cost its length times its depth)."""

    def __init__(self) -> None:
        self.left = _NESTED_TEXT

    def words_of(self, words: Sequence[str], depth: int) -> Iterator[list[str]]:
        """Every word list one simple command is judged as (see the module doc)."""
        at = 0
        while at < len(words) and (words[at] in _KEYWORDS or _assignment(words[at])):
            at += 1
        words = list(words[at:])
        if not words:
            return
        yield words
        program = os.path.basename(words[0])
        script: str | None = None
        if _SHELL.match(program):
            script = _shell_script(words)
        elif program == "eval":
            script = " ".join(words[1:])
        elif program in _WRAPPERS:
            yield from self.words_of(_unwrapped(program, words), self._deeper(depth))
        if script is not None:
            yield from self.words_in(script, self._deeper(depth))

    def words_in(self, script: str, depth: int) -> Iterator[list[str]]:
        """Every word list of a shell script's simple commands; its leading words when it
        cannot be split."""
        if depth:
            self.left -= len(script)
            if self.left < 0:
                raise _TooComplex
        try:
            commands = simple_commands(script)
        except ValueError:
            head = _OPERATOR_CHARS.split(script, maxsplit=1)[0]
            commands = [[word.strip("'\"") for word in head.split()]]
        for words in commands:
            yield from self.words_of(words, depth)

    @staticmethod
    def _deeper(depth: int) -> int:
        if depth >= _MAX_DEPTH:
            raise _TooComplex
        return depth + 1


@dataclass(frozen=True)
class RuleSet:
    """The rules a run applies, from every file read (see oiexec/runner/command_rules.py)."""

    rules: tuple[PrefixRule, ...]

    def judge(self, argv: Sequence[str]) -> tuple[PrefixRule, list[str]] | None:
        """The strictest refusing rule any simple command of `argv` matches, with the words
        it matched; None when the command may start.

        A tool runs the model's command as `[shell, "-c" or "-lc", command]`, whatever shell
        the run or the model chose: that shell is the tool's, not the model's, so only the
        command is judged (a rule on `bash` refuses a `bash -c ...` the model wrote, not
        every command). Raises `_TooComplex` past the nesting limits (`refusal` says so)."""
        script = argv[2] if len(argv) == 3 and argv[1] in ("-c", "-lc") else None
        walk = _Walk()
        commands = walk.words_of(argv, 0) if script is None else walk.words_in(script, 0)
        found: list[tuple[PrefixRule, list[str]]] = []
        for words in commands:
            for rule in self.rules:
                if rule.refuses and rule.matches(words):
                    found.append((rule, words[: len(rule.pattern)]))
        best = strictest([rule for rule, _ in found])
        return next((pair for pair in found if pair[0] is best), None)

    def refusal(self, argv: Sequence[str]) -> str | None:
        """What the model reads instead of the command's result, or None to run it."""
        if not any(rule.refuses for rule in self.rules):
            return None
        try:
            judged = self.judge(argv)
        except _TooComplex:
            return _TOO_COMPLEX
        if judged is None:
            return None
        rule, words = judged
        matched = shlex.join(words)
        if rule.decision == "forbidden":
            text = f"`{matched}` is forbidden by a command rule ({rule.origin})"
        else:
            text = (
                f"`{matched}` needs approval under a command rule ({rule.origin}), and "
                "nobody can approve a command in this run (approval policy `never`)"
            )
        why = f" {rule.justification.strip()}" if rule.justification else ""
        return f"The command was not run: {text}.{why}"
