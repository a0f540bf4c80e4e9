"""Writes the read-only sandbox refused, so a run that was asked to change code and could not
does not pass for one that did.

Two sources, both only under the `read-only` policy (where every refused write means the
workspace stayed as it was; under `workspace-write` a refusal is a path outside the roots
the agent may well have meant to leave alone):

- the file tools and patches: every one of them writes through the run's writer
  (`policy_writer`), which counts each path the policy refuses, once per call;
- the model's commands: one that failed saying a file system is read-only, or that a
  permission was denied, is taken for a refused write (`refused_write_command`). Which words
  appear depends on the backend: bubblewrap's read-only mounts give EROFS ("Read-only file
  system"), Landlock gives EACCES ("Permission denied"), Seatbelt EPERM ("Operation not
  permitted"). A heuristic: a command refused a read for lack of permission counts too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from oiexec.core.context import ToolContext, WriteRefusals
from oiexec.core.events import CommandExecutionItem
from oiexec.core.policy import SandboxPolicy
from oiexec.sandbox.writer import PolicyWriter

__all__ = ["CountingWriter", "policy_writer", "refused_write_command", "refused_write_commands"]

#: What a command prints when the read-only sandbox refuses its write, whichever backend.
_REFUSED = re.compile(
    r"read-only file system|permission denied|operation not permitted", re.IGNORECASE
)


class CountingWriter(PolicyWriter):
    """The sandbox's writer, counting the writes the read-only policy refuses: each refused
    path once for this writer (a tool asks about a path before reading it and again before
    writing it; that is one refused write)."""

    def __init__(self, policy: SandboxPolicy, refusals: WriteRefusals) -> None:
        super().__init__(policy)
        self._counting = policy.mode == "read-only"
        self._refusals = refusals
        self._seen: set[Path] = set()

    def resolve(self, path: Path, *, link_itself: bool = False) -> tuple[Path, str | None]:
        target, reason = super().resolve(path, link_itself=link_itself)
        if reason is not None and self._counting and target not in self._seen:
            self._seen.add(target)
            self._refusals.note()
        return target, reason


def policy_writer(ctx: ToolContext) -> PolicyWriter:
    """The writer one tool call writes through: judged by the run's sandbox policy, its
    refusals counted in the run's `refused_writes`."""
    return CountingWriter(ctx.sandbox.policy, ctx.refused_writes)


def refused_write_command(item: CommandExecutionItem) -> bool:
    """Whether a command of a read-only run looks refused by the sandbox: it ran, failed,
    and its output says a file system is read-only or a permission was denied."""
    if item.status != "failed" or item.exit_code in (None, 0):
        return False
    return _REFUSED.search(item.aggregated_output) is not None


def refused_write_commands(policy: SandboxPolicy, items: Iterable[CommandExecutionItem]) -> int:
    """How many of a run's commands the read-only sandbox refused (0 under any other mode)."""
    if policy.mode != "read-only":
        return 0
    return sum(refused_write_command(item) for item in items)
