"""`--version` and `--help` answer at once: they import neither the settings machinery
(pydantic) nor the HTTP stack, which a run pays for and a question about flags should not."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("pydantic", "pydantic_settings", "httpx", "rich", "mcp")


@pytest.mark.parametrize("argv", [["--version"], ["exec", "--help"], ["batch", "--help"]])
def test_questions_about_the_cli_import_nothing_a_run_needs(argv: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "oiexec", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))
