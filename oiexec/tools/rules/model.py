"""Command rules in Codex's execpolicy shape: a `prefix_rule` matches a command whose first
words are its pattern's (each pattern element one word, or a list of alternative words),
and decides `allow`, `prompt` or `forbidden`. When several rules match, the strictest
decision wins (forbidden > prompt > allow).

A run is headless (approval policy `never`): `prompt` cannot be answered, so it refuses the
command like `forbidden`; `allow` changes nothing (the sandbox still confines the command).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["DECISIONS", "Decision", "PrefixRule", "strictest"]

Decision = Literal["allow", "prompt", "forbidden"]
DECISIONS: tuple[Decision, ...] = ("allow", "prompt", "forbidden")
_RANK = {decision: rank for rank, decision in enumerate(DECISIONS)}


@dataclass(frozen=True)
class PrefixRule:
    """One `prefix_rule(...)`: `pattern` holds the alternatives of each word, in order."""

    pattern: tuple[tuple[str, ...], ...]
    decision: Decision
    justification: str | None
    #: `file:line` of the call, for messages.
    origin: str

    def matches(self, words: Sequence[str]) -> bool:
        """Whether `words` (one simple command) starts with the pattern. The program may be
        named by a path (`/usr/bin/git`): its file name is compared too."""
        if not self.pattern or len(words) < len(self.pattern):
            return False
        first, *rest = self.pattern
        program = words[0]
        if program not in first and not ("/" in program and os.path.basename(program) in first):
            return False
        return all(word in choices for word, choices in zip(words[1:], rest, strict=False))

    def shown(self) -> str:
        """The pattern as a reader writes it: `git push`, `git [push|fetch]`."""
        return " ".join(c[0] if len(c) == 1 else f"[{'|'.join(c)}]" for c in self.pattern)

    @property
    def refuses(self) -> bool:
        """Whether a headless run refuses what this rule matches (`prompt` or `forbidden`)."""
        return self.decision != "allow"


def strictest(rules: Sequence[PrefixRule]) -> PrefixRule | None:
    """The rule with the strictest decision (the first of equals), or None."""
    best: PrefixRule | None = None
    for rule in rules:
        if best is None or _RANK[rule.decision] > _RANK[best.decision]:
            best = rule
    return best
