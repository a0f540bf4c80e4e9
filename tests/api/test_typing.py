"""What a user's type checker sees of `from oiexec import ...`: the lazily loaded names keep
their real types under `mypy --strict`, and a misspelt name is an error rather than an
`object` the checker lets through."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

USER_CODE = """\
from oiexec import Agent, MaxTurnsExceeded, Turn

def fix() -> int:
    turn: Turn = Agent(sandbox="read-only").start_thread().run("fix it")
    reveal_type(turn.exit_code)
    try:
        turn.raise_for_status()
    except MaxTurnsExceeded:
        return 4
    return turn.exit_code

import oiexec
oiexec.Agnet
"""


def test_the_api_names_type_check_and_a_misspelt_one_is_reported(tmp_path: Path) -> None:
    script = tmp_path / "user_code.py"
    script.write_text(USER_CODE)
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = checked.stdout.splitlines()
    assert any(
        "Revealed type is" in line and "oiexec.core.errors.ExitCode" in line for line in lines
    ), lines
    errors = [line for line in lines if ": error:" in line]
    assert len(errors) == 1, lines
    assert ':13: error: Module has no attribute "Agnet"' in errors[0]
