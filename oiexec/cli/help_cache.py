"""Every command's `--help` page, rendered once by click and shipped in `oiexec/_help_pages.py`,
so that `interpreter exec --help` answers before click and the command tree are imported.

Python and `import click` alone take ~60 ms of the 40 ms a help page may cost; the pages are
the same bytes every time (the program name is always `interpreter`, the width is click's
cap of 78 columns), so they are rendered when the CLI changes, not when a user asks.
`python -m oiexec.cli.help_cache` rewrites the file; a test fails, naming that command, when a
page no longer matches what click renders. The entry point reads the file only for a page it
knows at the width click would use; anything else goes to click as before. A Python module
rather than JSON: its compiled form loads with no decoder to import (`json` brings `re`,
~12 ms of a help page's 40).
"""

from __future__ import annotations

import json
from pathlib import Path

import click
from click.testing import CliRunner

PAGES = Path(__file__).parents[1] / "_help_pages.py"


def _paths(
    group: click.Group, ctx: click.Context, prefix: tuple[str, ...]
) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = [prefix]
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        path = (*prefix, name)
        if isinstance(command, click.Group):
            found += _paths(command, click.Context(command, parent=ctx, info_name=name), path)
        else:
            found.append(path)
    return found


def render() -> dict[str, str]:
    """Each command path's help page as click prints it on a terminal of 80 columns or more
    (it wraps at 78 then), keyed by the arguments before the help flag, joined by spaces (the
    root page under "")."""
    from oiexec.cli import cli

    runner = CliRunner()
    pages: dict[str, str] = {}
    for path in _paths(cli, click.Context(cli, info_name="interpreter"), ()):
        result = runner.invoke(cli, [*path, "--help"], prog_name="interpreter", terminal_width=78)
        if result.exit_code != 0:
            raise RuntimeError(f"`interpreter {' '.join(path)} --help` failed: {result.output}")
        pages[" ".join(path)] = result.output
    return pages


def module_text(pages: dict[str, str]) -> str:
    """`pages` as the module the entry point imports (JSON strings are Python literals)."""
    lines = [
        '"""Every command\'s --help page, written by `python -m oiexec.cli.help_cache`."""',
        "",
        "PAGES: dict[str, str] = {",
        *(f"    {json.dumps(key)}: {json.dumps(pages[key])}," for key in sorted(pages)),
        "}",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    PAGES.write_text(module_text(render()), encoding="utf-8")
    print(f"wrote {PAGES}")


if __name__ == "__main__":
    main()
