"""A shell command line split into its simple commands, as words: what the hooks' program
check (oiexec/extensions/outside.py) and the command rules (oiexec/tools/rules) judge.

Not a shell: POSIX quoting (shlex) is honoured, and the line is cut at every control
operator (`;`, `&&`, `||`, `|`, `&`, newlines, the parentheses of subshells and command
substitutions); redirections and their targets are dropped. Commands inside a command
substitution (`$(...)`, backquotes), quoted or not, are simple commands of their own too,
so `echo "$(git push)"` yields `echo` and `git push`. Whatever is unsure is split more, never less:
a line read wrongly gives an extra command to judge, not a hidden one.

`ValueError` when the line cannot be split (an unclosed quote): the caller decides what an
unreadable line means for it.
"""

from __future__ import annotations

import shlex

__all__ = ["OPERATORS", "REDIRECTS", "simple_commands"]

#: Control operators: each ends a simple command.
OPERATORS = frozenset({";", "&&", "||", "|", "&", "(", ")", ";;", "|&", ";&", ";;&"})
#: Redirection operators: the next word is a file, not part of the command.
REDIRECTS = frozenset({">", ">>", "<", "<<", "<<<", ">&", "<&", ">|", "&>", "&>>", "<>"})
_PUNCTUATION = frozenset("();<>|&")
_KNOWN = OPERATORS | REDIRECTS
_LONGEST = max(len(op) for op in _KNOWN)
#: How deep command substitutions are followed; deeper ones are not read.
MAX_DEPTH = 8


def _operators(token: str) -> list[str]:
    """A run of punctuation shlex kept as one token (`&&(`, `)|`), cut into the operators
    it is made of, longest first."""
    parts: list[str] = []
    at = 0
    while at < len(token):
        for size in range(min(_LONGEST, len(token) - at), 0, -1):
            piece = token[at : at + size]
            if piece in _KNOWN:
                parts.append(piece)
                at += size
                break
        else:  # a lone character no operator starts with: its own operator
            parts.append(token[at])
            at += 1
    return parts


def _substitutions(word: str) -> list[str]:
    """The scripts of the `$(...)` substitutions left inside one word (a quoted one: shlex
    splits an unquoted one at its parentheses), each to its balancing parenthesis or the
    end of the word."""
    found: list[str] = []
    at = word.find("$(")
    while at >= 0:
        depth, end = 1, at + 2
        while end < len(word) and depth:
            depth += {"(": 1, ")": -1}.get(word[end], 0)
            end += 1
        found.append(word[at + 2 : end - 1 if depth == 0 else end])
        at = word.find("$(", end)
    return found


def _tokens(text: str) -> list[str]:
    lexer = shlex.shlex(text.replace("\n", " ; "), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    tokens: list[str] = []
    for token in lexer:
        if token and set(token) <= _PUNCTUATION and token not in _KNOWN:
            tokens.extend(_operators(token))
        else:
            tokens.append(token)
    return tokens


def simple_commands(text: str, *, depth: int = 0) -> list[list[str]]:
    """The words of each simple command of `text`, in order (see the module doc)."""
    commands: list[list[str]] = []
    nested: list[list[str]] = []
    simple: list[str] = []
    skip_next = False
    for token in [*_tokens(text), ";"]:
        if skip_next:
            skip_next = False
            continue
        if token in REDIRECTS:
            skip_next = True  # the file, not a word of the command
            continue
        if token not in OPERATORS:
            simple.append(token)
            if depth < MAX_DEPTH and "$(" in token:
                for script in _substitutions(token):
                    nested.extend(_read_nested(script, depth + 1))
            continue
        if simple:
            commands.append(simple)
        simple = []
    if depth < MAX_DEPTH and "`" in text:
        # Backquotes are taken from the raw text, whatever quotes them: shlex keeps them
        # inside words, and one quoted by '...' merely gives an extra command to judge.
        for script in text.split("`")[1::2]:
            nested.extend(_read_nested(script, depth + 1))
    return commands + nested


def _read_nested(script: str, depth: int) -> list[list[str]]:
    """A substitution's commands; one that cannot be split is taken word by word (it is
    inside a word that did split, so the outer line stays readable)."""
    if not script.strip():
        return []
    try:
        return simple_commands(script, depth=depth)
    except ValueError:
        words = script.split()
        return [words] if words else []
