"""What a user's type checker sees of `from oiexec import ...`, checked by `mypy` (strict) from
.ci/run: the lazily loaded names keep their real types, and a misspelt name is an error
rather than an `object` the checker lets through. Not a test module: nothing here runs."""

from __future__ import annotations

from typing import assert_type

import oiexec
from oiexec import Agent, MaxTurnsExceeded, Turn
from oiexec.core.errors import ExitCode


def fix() -> int:
    turn: Turn = Agent(sandbox="read-only").start_thread().run("fix it")
    # Fails if the lazy name's attribute degrades to Any or object.
    assert_type(turn.exit_code, ExitCode)
    assert_type(turn.cost_usd, float | None)
    try:
        turn.raise_for_status()
    except MaxTurnsExceeded:
        return 4
    return turn.exit_code


# A misspelt name must be an error: were it not, strict mypy's warn_unused_ignores reports
# this ignore as unused, so the check fails either way round.
misspelt = oiexec.Agnet  # type: ignore[attr-defined]
