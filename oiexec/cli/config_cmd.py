"""`interpreter config show`: the effective settings and where each one came from."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

_SECRET_FIELDS = {"experimental_bearer_token"}


def _flatten(data: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = []
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            rows.extend(_flatten(value, dotted + "."))
        else:
            rows.append((dotted, "[REDACTED]" if key in _SECRET_FIELDS and value else value))
    return rows


@click.group("config")
def config_group() -> None:
    """Inspect configuration."""


@config_group.command("show")
@click.option("--origins", is_flag=True, help="Show which layer set each value.")
@click.option("-p", "--profile", help="Config profile to apply.")
@click.option("-c", "--config", "overrides", multiple=True, metavar="KEY=VALUE")
@click.option("-C", "--cd", "cd", type=click.Path(file_okay=False), help="Project directory.")
@click.option("--strict-config", is_flag=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of TOML-like lines.")
def show_command(
    origins: bool,
    profile: str | None,
    overrides: tuple[str, ...],
    cd: str | None,
    strict_config: bool,
    as_json: bool,
) -> None:
    """Print the effective settings (exec's forced values included)."""
    from oiexec.config.loader import ConfigInputs, load_config

    cwd = Path(os.path.abspath(cd or os.getcwd()))
    loaded = load_config(
        ConfigInputs(
            cwd=cwd,
            profile=profile,
            overrides=overrides,
            forced={"approval_policy": "never"},
            strict=strict_config,
        )
    )
    for warning in loaded.warnings:
        click.echo(f"warning: {warning}", err=True)
    data = loaded.settings.model_dump(mode="json", exclude_none=True)
    rows = _flatten(data)
    if as_json:
        click.echo(
            json.dumps(
                [
                    {"key": k, "value": v, "origin": loaded.origins.get(k, "default")}
                    for k, v in rows
                ],
                indent=2,
            )
        )
        return
    click.echo(f"# home: {loaded.home}")
    click.echo(f"# project: {loaded.project_root} ({'trusted' if loaded.trusted else 'untrusted'})")
    for key, value in rows:
        line = f"{key} = {json.dumps(value)}"
        if origins:
            line = f"{line:<60} # {loaded.origins.get(key, 'default')}"
        click.echo(line)
