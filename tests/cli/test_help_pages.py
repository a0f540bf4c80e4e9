"""`interpreter COMMAND --help` answers from the shipped pages before click is imported, with
exactly the bytes click prints; where click would print something else (a narrow terminal, an
alias, other arguments) click answers."""

from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner

from oiexec.cli import cli
from oiexec.cli.help_cache import PAGES, render


def _shipped() -> dict[str, str]:
    namespace: dict[str, dict[str, str]] = {}
    exec(compile(PAGES.read_text(encoding="utf-8"), str(PAGES), "exec"), namespace)
    return namespace["PAGES"]


def test_the_shipped_pages_are_what_click_renders_for_every_command() -> None:
    rendered = render()
    shipped = _shipped()
    stale = sorted(
        set(rendered) ^ set(shipped) | {k for k in rendered if rendered[k] != shipped.get(k)}
    )
    assert not stale, (
        f"help pages out of date for {stale}: run `python -m oiexec.cli.help_cache` and commit "
        "oiexec/_help_pages.py"
    )
    # The pages cover the whole tree, subcommands of subcommands included.
    assert {"", "exec", "exec review", "batch run", "mcp add"} <= set(shipped)


def test_every_command_takes_h_as_it_takes_help() -> None:
    # The entry point answers `-h` from the same page as `--help`.
    runner = CliRunner()
    for path, page in _shipped().items():
        words = path.split()
        short = runner.invoke(cli, [*words, "-h"], prog_name="interpreter", terminal_width=78)
        assert short.exit_code == 0, (path, short.output)
        assert short.output == page, path


def _interpreter(*argv: str, columns: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "oiexec", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": columns},
        check=True,
    )


def _imported(stderr: str) -> set[str]:
    return {line.rsplit("|", 1)[-1].strip() for line in stderr.splitlines()}


@pytest.mark.parametrize(
    ("argv", "key"),
    [(["exec", "--help"], "exec"), (["-h"], ""), (["exec", "review", "-h"], "exec review")],
)
def test_a_help_page_is_printed_without_importing_click(argv: list[str], key: str) -> None:
    done = _interpreter(*argv, columns="120")
    assert done.stdout == _shipped()[key]
    assert "click" not in _imported(done.stderr)


def test_a_narrow_terminal_gets_clicks_own_wrapping() -> None:
    done = _interpreter("exec", "--help", columns="60")
    assert "click" in _imported(done.stderr)
    assert done.stdout != _shipped()["exec"]
    # Click wraps to the terminal: 60 columns less its margin of 2.
    narrow = CliRunner().invoke(cli, ["exec", "--help"], prog_name="interpreter", terminal_width=58)
    assert done.stdout == narrow.output
    assert done.stdout.startswith("Usage: interpreter exec ")


def test_an_alias_and_a_command_with_arguments_go_to_click() -> None:
    alias = _interpreter("e", "--help", columns="120")
    assert alias.stdout.startswith("Usage: interpreter e ")
    assert "click" in _imported(alias.stderr)
    # `--model X --help` is not a page the entry point knows; click still answers it.
    flagged = _interpreter("exec", "--model", "x", "--help", columns="120")
    assert flagged.stdout == _shipped()["exec"]
    assert "click" in _imported(flagged.stderr)
