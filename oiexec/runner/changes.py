"""Whether a run changed what it was asked to: the writes the read-only sandbox refused
(counted by the tools: tools/refusals), said at the end of the run, and `--require-change`,
which fails a run whose diff is empty.

The wording lives here once: exec's stderr, its run log and JUnit report, and the batch's
summary all say the same thing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from oiexec.core.errors import NoChange, UsageError

if TYPE_CHECKING:
    from oiexec.core.context import WriteRefusals
    from oiexec.core.events import CommandExecutionItem
    from oiexec.core.policy import SandboxPolicy
    from oiexec.output.diff import Baseline

__all__ = [
    "check_require_change",
    "count_refused_writes",
    "refused_writes_warning",
    "require_change",
]

#: What lets the agent edit files, as the messages say it.
_WRITABLE = "-s workspace-write"


def count_refused_writes(
    policy: SandboxPolicy, tools: WriteRefusals, commands: Iterable[CommandExecutionItem]
) -> int:
    """The run's writes the read-only sandbox refused: the file tools' and the commands'."""
    from oiexec.tools.refusals import refused_write_commands

    return tools.count + refused_write_commands(policy, commands)


def refused_writes_warning(count: int) -> str:
    """The end-of-run warning (and JUnit line) for `count` > 0 refused writes."""
    return (
        f"the sandbox (read-only) refused {count} write(s); the workspace was not changed. "
        f"Pass {_WRITABLE} to let the agent edit files."
    )


def check_require_change(policy: SandboxPolicy) -> None:
    """`--require-change` under a sandbox in which no file can change would spend the whole
    run only to fail: a usage error before the model is called."""
    if policy.mode == "read-only":
        raise UsageError(
            "--require-change cannot be met in the read-only sandbox: the agent can change "
            "no file there",
            hint=f"Pass {_WRITABLE} (or set sandbox_mode) to let the agent edit files, or "
            "drop --require-change.",
        )


def require_change(baseline: Baseline) -> None:
    """Raises `NoChange` when the workspace is as it was when the run started."""
    if baseline.snapshot() == baseline.tree:
        raise NoChange(
            "--require-change: the run ended without changing any file (its diff is empty); "
            "read the final message for why, or drop --require-change if no change can be "
            "the right outcome"
        )
