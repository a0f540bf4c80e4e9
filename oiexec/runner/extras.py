"""Skills, hooks and `notify` for one run: what the runner hands the harness and the loop."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from oiexec.core.context import ToolContext
from oiexec.core.protocols import ToolGate
from oiexec.extensions.skills import Skill

if TYPE_CHECKING:
    from oiexec.output.runlog import RunLogSink
    from oiexec.runner.prepare import Prepared

__all__ = ["Extras", "open_extras"]


@dataclass
class Extras:
    skills: tuple[Skill, ...] = ()
    #: The pre/post tool hooks around every call, None without any.
    gate: ToolGate | None = None


def open_extras(
    prepared: Prepared,
    ctx: ToolContext,
    stack: contextlib.ExitStack,
    runlog: RunLogSink | None,
) -> Extras:
    return Extras()
