"""`interpreter models list`: what the model catalog knows (windows, prices, tool calling).

The catalog is the models.dev snapshot and genai-prices shipped with oiexec (no network);
a run uses the same figures for compaction and `--max-cost` unless config overrides them.
`--json` prints an array of objects, one per model:

    {"provider": "openai", "model": "gpt-5", "context_window": 400000,
     "input_per_mtok": 1.25, "output_per_mtok": 10.0, "cached_input_per_mtok": 0.125,
     "tool_call": true}

Unknown figures are null; prices are USD per million tokens (the base rate where a provider
charges more for long prompts); local providers (ollama, lmstudio) cost 0.

Providers the user configured (`[model_providers.<id>]` that is not a built-in id) are listed
too, marked `"user_provider": true` (`(user provider)` in the table): the catalog's models
when the id is one of the catalog's, else the model(s) config selects for it (top level or a
profile), with unknown figures null (`-` when none is configured). Nothing is fetched.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from oiexec.catalog.listing import ListedModel
    from oiexec.config.settings import Settings

_COLUMNS = ("provider", "model", "context", "$/Mtok in", "$/Mtok out", "tools")


@dataclass(frozen=True)
class _Row:
    listed: ListedModel
    #: From the user's `[model_providers.<id>]`, not a built-in provider.
    user: bool = False
    #: Whether tool calling is known (the catalog says); a model only config names is not.
    known: bool = True

    def as_json(self) -> dict[str, Any]:
        data = self.listed.as_json()
        if not self.known:
            data["tool_call"] = None
        return {**data, "user_provider": self.user}


@click.group("models", context_settings={"help_option_names": ["-h", "--help"]})
def models_group() -> None:
    """The model catalog: context windows, prices and tool calling (offline)."""


@models_group.command("list")
@click.option(
    "-p",
    "--provider",
    metavar="ID",
    help="Only this provider: a built-in id (openai, anthropic, ...), any id of the catalog, "
    "or one of your [model_providers.<id>].",
)
@click.option("--all", "include_all", is_flag=True, help="Include models that cannot call tools.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array, one object per model.")
def list_command(provider: str | None, include_all: bool, as_json: bool) -> None:
    """Models the catalog knows for the built-in providers and the ones your config defines
    (or --provider), with their context window, input and output price in USD per million
    tokens, and tool calling. Only models that can call tools are listed unless --all."""
    from oiexec.catalog.listing import list_models

    settings = _settings()
    user = _user_providers(settings)
    rows: list[_Row] = []
    if provider is None or provider not in user:
        rows = [_Row(row) for row in list_models(provider, include_all=include_all)]
    for name in user if provider is None else [provider] if provider in user else []:
        rows.extend(_user_rows(settings, name, include_all))
    if as_json:
        click.echo(json.dumps([row.as_json() for row in rows], indent=2))
    elif sys.stdout.isatty():
        _rich_table(rows)
    else:
        click.echo(_plain_table(rows))


def _settings() -> Settings:
    """The configuration a run here would load (home and project), for its own providers."""
    from oiexec.config.loader import ConfigInputs, load_config

    loaded = load_config(ConfigInputs(cwd=Path(os.getcwd())), warnings=[])
    return loaded.settings


def _user_providers(settings: Settings) -> list[str]:
    from oiexec.config.providers import BUILTIN_PROVIDERS

    return sorted(p for p in settings.model_providers if p not in BUILTIN_PROVIDERS)


def _user_rows(settings: Settings, provider: str, include_all: bool) -> list[_Row]:
    """A user provider's models: the catalog's when its id is one of the catalog's, else
    the models config selects for it, with unknown figures."""
    from oiexec.catalog.listing import ListedModel, known_providers, list_models

    if provider in known_providers()[1]:
        return [_Row(row, user=True) for row in list_models(provider, include_all=include_all)]
    models = [settings.model] if settings.model_provider == provider else []
    for profile in settings.profiles.values():
        model = profile.get("model")
        if profile.get("model_provider") == provider and isinstance(model, str):
            models.append(model)
    blank = ListedModel(provider, "-", None, None, None, None, False)
    return [
        _Row(dataclasses.replace(blank, model=model), user=True, known=False)
        for model in dict.fromkeys(models or ["-"])
    ]


def _cells(entry: _Row) -> list[str]:
    row = entry.listed
    return [
        f"{row.provider} (user provider)" if entry.user else row.provider,
        row.model,
        "-" if row.context_window is None else f"{row.context_window:,}",
        _money(row.input_per_mtok),
        _money(row.output_per_mtok),
        ("yes" if row.tool_call else "no") if entry.known else "-",
    ]


def _money(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _plain_table(rows: list[_Row]) -> str:
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


def _rich_table(rows: list[_Row]) -> None:
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
