"""Reading a `.rules` file: the literal-only part of Codex's Starlark policy language.

The text is parsed by Python's `ast` (Starlark's syntax for calls, strings and lists is
Python's) and never run. A file is a sequence of top-level calls with keyword arguments
whose values are literals: strings and lists (of strings, or of lists of strings). Anything
else (a variable, an expression, a `load`, a loop, a def) is refused, naming the file and
line. `prefix_rule(pattern=[...], decision=..., justification=..., match=[...],
not_match=[...])` makes a rule; its `match` and `not_match` examples are checked now, so a
rule that does not do what its author wrote fails the run before any command, not later.

Codex's other calls (`host_executable`, `network_rule`) are skipped with a note: oiexec
has no such rules, and a file written for Codex still loads.
"""

from __future__ import annotations

import ast
import shlex
from dataclasses import dataclass, field
from typing import TypeAlias

from oiexec.core.errors import ConfigError
from oiexec.tools.rules.model import DECISIONS, Decision, PrefixRule

__all__ = ["ParsedRules", "parse_rules"]

_HINT = "fix the file (see docs/rules.md), or run with --ignore-rules to skip command rules"
#: Codex calls with no effect in oiexec: skipped, with a note.
_SKIPPED_CALLS = frozenset({"host_executable", "network_rule"})
_KEYWORDS = frozenset({"pattern", "decision", "justification", "match", "not_match"})

#: A literal value: a string, or a list whose items are literal values.
Literal_: TypeAlias = "str | list[Literal_]"


@dataclass
class ParsedRules:
    rules: list[PrefixRule] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class _Refused(Exception):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def parse_rules(text: str, source: str) -> ParsedRules:
    """The rules of one file's `text`; `source` names it in messages. A `ConfigError`
    naming `source:line` for anything that is not a valid rule."""
    try:
        tree = ast.parse(text, filename=source, mode="exec")
    except SyntaxError as exc:
        where = f"{source}:{exc.lineno}" if exc.lineno else source
        raise ConfigError(f"{where}: not valid rules syntax: {exc.msg}", hint=_HINT) from None
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, absurd nesting
        raise ConfigError(f"{source}: cannot be read as rules: {exc}", hint=_HINT) from None
    parsed = ParsedRules()
    try:
        for statement in tree.body:
            _statement(statement, source, parsed)
    except _Refused as exc:
        raise ConfigError(f"{source}:{exc.line}: {exc.message}", hint=_HINT) from None
    return parsed


def _statement(node: ast.stmt, source: str, parsed: ParsedRules) -> None:
    line = node.lineno
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        raise _Refused(line, f"only prefix_rule(...) calls are allowed here, not {_what(node)}")
    call = node.value
    name = call.func.id if isinstance(call.func, ast.Name) else None
    if name in _SKIPPED_CALLS:
        parsed.notes.append(f"{source}:{line}: {name}(...) has no effect in oiexec; skipped")
        return
    if name != "prefix_rule":
        raise _Refused(line, "only prefix_rule(...) calls are allowed here")
    if call.args:
        raise _Refused(line, "prefix_rule takes keyword arguments only (pattern=[...], ...)")
    values: dict[str, Literal_] = {}
    for keyword in call.keywords:
        if keyword.arg is None:
            raise _Refused(line, "prefix_rule does not take **arguments")
        if keyword.arg not in _KEYWORDS:
            known = ", ".join(sorted(_KEYWORDS))
            raise _Refused(line, f"prefix_rule has no argument `{keyword.arg}` (known: {known})")
        values[keyword.arg] = _literal(keyword.value, keyword.arg)
    parsed.rules.append(_rule(values, f"{source}:{line}", line))


def _what(node: ast.AST) -> str:
    kind = type(node).__name__.lower()
    return {"expr": "an expression", "assign": "an assignment"}.get(kind, f"a `{kind}` statement")


def _literal(node: ast.expr, name: str, depth: int = 0) -> Literal_:
    """A string or a list of literals; nothing else is read."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.List | ast.Tuple) and depth < 2:
        return [_literal(item, name, depth + 1) for item in node.elts]
    raise _Refused(node.lineno, f"`{name}` must be a string or a list of strings (a literal)")


def _string(value: Literal_ | None, name: str, line: int) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise _Refused(line, f"`{name}` must be a string")


def _pattern(value: Literal_ | None, line: int) -> tuple[tuple[str, ...], ...]:
    if not isinstance(value, list) or not value:
        raise _Refused(line, "`pattern` must be a non-empty list of words")
    pattern: list[tuple[str, ...]] = []
    for item in value:
        choices = [item] if isinstance(item, str) else item
        if not choices or not all(isinstance(c, str) and c for c in choices):
            raise _Refused(
                line, "each `pattern` element must be a word, or a non-empty list of words"
            )
        pattern.append(tuple(str(c) for c in choices))
    return tuple(pattern)


def _examples(value: Literal_ | None, name: str, line: int) -> list[list[str]]:
    """`match`/`not_match`: command lines (split as a shell would) or lists of words."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Refused(line, f"`{name}` must be a list of examples")
    examples: list[list[str]] = []
    for item in value:
        if isinstance(item, str):
            try:
                examples.append(shlex.split(item))
            except ValueError as exc:
                raise _Refused(line, f"`{name}` example {item!r} cannot be split: {exc}") from None
        elif all(isinstance(word, str) for word in item):
            examples.append([str(word) for word in item])
        else:
            raise _Refused(line, f"each `{name}` example must be a string or a list of words")
    return examples


def _rule(values: dict[str, Literal_], origin: str, line: int) -> PrefixRule:
    if "pattern" not in values:
        raise _Refused(line, "prefix_rule needs `pattern`")
    decision_text = _string(values.get("decision"), "decision", line) or "allow"
    decision: Decision | None = next((d for d in DECISIONS if d == decision_text), None)
    if decision is None:
        raise _Refused(
            line, f"`decision` is {decision_text!r}; use one of: allow, prompt, forbidden"
        )
    rule = PrefixRule(
        pattern=_pattern(values["pattern"], line),
        decision=decision,
        justification=_string(values.get("justification"), "justification", line),
        origin=origin,
    )
    for words in _examples(values.get("match"), "match", line):
        if not rule.matches(words):
            raise _Refused(
                line, f"the `match` example `{shlex.join(words)}` does not match `{rule.shown()}`"
            )
    for words in _examples(values.get("not_match"), "not_match", line):
        if rule.matches(words):
            raise _Refused(
                line, f"the `not_match` example `{shlex.join(words)}` matches `{rule.shown()}`"
            )
    return rule
