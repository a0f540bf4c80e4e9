"""`interpreter models list`: what the model catalog knows (windows, prices, tool calling).

The catalog is the models.dev snapshot and genai-prices shipped with oiexec (no network);
a run uses the same figures for compaction and `--max-cost` unless config overrides them.
`--json` prints an array of objects, one per model:

    {"provider": "openai", "model": "gpt-5", "context_window": 400000,
     "input_per_mtok": 1.25, "output_per_mtok": 10.0, "cached_input_per_mtok": 0.125,
     "tool_call": true}

Unknown figures are null; prices are USD per million tokens (the base rate where a provider
charges more for long prompts); local providers (ollama, lmstudio) cost 0.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from oiexec.config.catalog_list import ListedModel

_COLUMNS = ("provider", "model", "context", "$/Mtok in", "$/Mtok out", "tools")


@click.group("models", context_settings={"help_option_names": ["-h", "--help"]})
def models_group() -> None:
    """The model catalog: context windows, prices and tool calling (offline)."""


@models_group.command("list")
@click.option(
    "-p",
    "--provider",
    metavar="ID",
    help="Only this provider: a built-in id (openai, anthropic, ...) or any id of the catalog.",
)
@click.option("--all", "include_all", is_flag=True, help="Include models that cannot call tools.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array, one object per model.")
def list_command(provider: str | None, include_all: bool, as_json: bool) -> None:
    """Models the catalog knows for the built-in providers (or --provider), with their context
    window, input and output price in USD per million tokens, and tool calling. Only models
    that can call tools are listed unless --all."""
    from oiexec.config.catalog_list import list_models

    rows = list_models(provider, include_all=include_all)
    if as_json:
        click.echo(json.dumps([row.as_json() for row in rows], indent=2))
    elif sys.stdout.isatty():
        _rich_table(rows)
    else:
        click.echo(_plain_table(rows))


def _cells(row: ListedModel) -> list[str]:
    return [
        row.provider,
        row.model,
        "-" if row.context_window is None else f"{row.context_window:,}",
        _money(row.input_per_mtok),
        _money(row.output_per_mtok),
        "yes" if row.tool_call else "no",
    ]


def _money(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _plain_table(rows: list[ListedModel]) -> str:
    """Columns padded with spaces, numbers right-aligned: easy for `awk`, `sort -k`, `grep`."""
    lines = [list(_COLUMNS), *(_cells(row) for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(_COLUMNS))]
    right = {2, 3, 4}
    return "\n".join(
        "  ".join(
            cell.rjust(width) if i in right else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(line, widths, strict=True))
        ).rstrip()
        for line in lines
    )


def _rich_table(rows: list[ListedModel]) -> None:
    """A rich table when it fits the terminal; plain columns when it would have to cut or
    fold model ids, which are what gets copied into `-m`."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=f"{len(rows)} models",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
    )
    for index, column in enumerate(_COLUMNS):
        table.add_column(column, justify="right" if index in (2, 3, 4) else "left")
    for row in rows:
        table.add_row(*_cells(row))
    console = Console(highlight=False)
    # Measured on an unbounded console: the real one caps the measure at its own width.
    if Console(width=100_000).measure(table).maximum > console.width:
        click.echo(_plain_table(rows))
        return
    console.print(table)
