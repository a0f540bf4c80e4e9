"""`interpreter config show`: every effective setting and where each one came from.

Defaults are shown too, and so are the values a run derives rather than reads: the sandbox
mode (from trust when no layer sets it), the harness (chosen for the model and provider when
none is set) and the provider a run would use, built-in fields included. `--json` prints the
same rows as a list of `{"key", "value", "origin"}` objects.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from oiexec.core.policy import SANDBOX_MODES

if TYPE_CHECKING:
    from oiexec.config.loader import LoadedConfig

_SECRET_FIELDS = {"experimental_bearer_token"}
_DEFAULT = "default"

Row = tuple[str, Any, str]


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
@click.option("-m", "--model", help="As exec's -m: show the config a run with it gets.")
@click.option("-s", "--sandbox", "sandbox_mode", type=click.Choice(SANDBOX_MODES))
@click.option("--oss", is_flag=True, help="As exec's --oss.")
@click.option("--local-provider", type=click.Choice(["ollama", "lmstudio"]))
@click.option("-C", "--cd", "cd", type=click.Path(file_okay=False), help="Project directory.")
@click.option("--strict-config", is_flag=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of TOML-like lines.")
def show_command(
    origins: bool,
    profile: str | None,
    overrides: tuple[str, ...],
    model: str | None,
    sandbox_mode: str | None,
    oss: bool,
    local_provider: str | None,
    cd: str | None,
    strict_config: bool,
    as_json: bool,
) -> None:
    """Print the effective settings (exec's forced values and derived defaults included)."""
    from oiexec.config.loader import ConfigInputs, load_config

    cwd = Path(os.path.abspath(cd or os.getcwd()))
    flags: dict[str, Any] = {"model": model, "sandbox_mode": sandbox_mode}
    if oss or local_provider:
        flags["model_provider"] = local_provider or "ollama"
    loaded = load_config(
        ConfigInputs(
            cwd=cwd,
            profile=profile,
            overrides=overrides,
            flags=flags,
            strict=strict_config,
        )
    )
    for warning in loaded.warnings:
        click.echo(f"warning: {warning}", err=True)
    for note in _no_effect_notes(loaded, strict=strict_config):
        click.echo(f"warning: {note}", err=True)
    rows = effective_rows(loaded)
    if as_json:
        click.echo(json.dumps([{"key": k, "value": v, "origin": o} for k, v, o in rows], indent=2))
        return
    click.echo(f"# home: {loaded.home}")
    click.echo(f"# project: {loaded.project_root} ({'trusted' if loaded.trusted else 'untrusted'})")
    for key, value, origin in rows:
        line = f"{key} = {'(not set)' if value is None else json.dumps(value)}"
        if origins:
            line = f"{line:<60} # {origin}"
        click.echo(line)


def _no_effect_notes(loaded: LoadedConfig, *, strict: bool) -> list[str]:
    """What a run with this config would report as having no effect (or refuse, strict)."""
    from oiexec.config.effects import RunFacts, no_effect_notes
    from oiexec.config.providers import resolve_provider
    from oiexec.core.errors import ConfigError
    from oiexec.runner.prepare import run_facts

    try:
        facts = run_facts(loaded.settings, *resolve_provider(loaded.settings))
    except ConfigError:
        facts = RunFacts(web_search_supported=True)  # shown below as the run would fail
    return no_effect_notes(loaded.settings, loaded.layers, loaded.ignored, facts, strict=strict)


def _profile_mode(loaded: LoadedConfig) -> tuple[str | None, str]:
    """The sandbox mode the permission profile gives, or why it would be refused."""
    from oiexec.config.permissions import compile_profile
    from oiexec.core.errors import ConfigError

    name = loaded.settings.default_permissions or ""
    try:
        rules = compile_profile(name, loaded.settings.permissions, loaded.project_root, os.environ)
    except ConfigError as exc:
        return None, f"permission profile {name}: refused ({exc.message})"
    return rules.mode, f"permission profile {name}"


def effective_rows(loaded: LoadedConfig) -> list[Row]:
    """(dotted key, value, origin) for every setting, in the settings' order, with the
    derived values (sandbox mode, harness, the provider's fields) where a run gets them."""
    data = loaded.settings.model_dump(mode="json")
    derived = {key: (value, origin) for key, value, origin in _derived(loaded)}
    rows: list[Row] = []
    for key, value in _flatten(data):
        if key in derived:
            rows.append((key, *derived.pop(key)))
        elif key == "model_providers" and value == {}:
            rows.append(("model_providers", None, ""))  # placeholder for the provider rows
        else:
            rows.append((key, value, loaded.origins.get(key, _DEFAULT)))
    # The provider's fields that no layer set (a built-in's URL, its key variable) go after
    # the other provider tables.
    at = max(
        (i for i, row in enumerate(rows) if row[0].split(".")[0] == "model_providers"), default=0
    )
    extra = [(key, value, origin) for key, (value, origin) in derived.items()]
    rows[at + 1 : at + 1] = extra
    return [row for row in rows if row[2]]


def _derived(loaded: LoadedConfig) -> list[Row]:
    from oiexec.config.providers import BUILTIN_PROVIDERS, resolve_provider
    from oiexec.core.errors import ConfigError
    from oiexec.harness.select import choose_harness_id
    from oiexec.runner.policy import effective_mode

    settings, origins = loaded.settings, loaded.origins
    rows: list[Row] = []
    trust = "trusted" if loaded.trusted else "untrusted"
    mode: str | None = effective_mode(settings, trusted=loaded.trusted, bypass=False)
    origin = origins.get("sandbox_mode", f"default ({trust} project)")
    if settings.default_permissions is not None and settings.sandbox_mode is None:
        mode, origin = _profile_mode(loaded)
    rows.append(("sandbox_mode", mode, origin))
    try:
        provider_id, provider = resolve_provider(settings)
    except ConfigError as exc:
        click.echo(f"warning: {exc.message}", err=True)
        return rows
    try:
        harness = choose_harness_id(settings.harness, settings.model, provider_id, provider)
        chosen = f"default (chosen for {settings.model} on {provider_id})"
        rows.append(("harness", harness, origins.get("harness", chosen)))
    except ConfigError as exc:
        click.echo(f"warning: {exc.message}", err=True)
    rows += _catalog_rows(loaded, provider_id)
    builtin = provider_id in BUILTIN_PROVIDERS
    for field, value in _flatten(provider.model_dump(mode="json")):
        key = f"model_providers.{provider_id}.{field}"
        origin = origins.get(key) or ("built-in provider" if builtin else _DEFAULT)
        borrowed = provider_id == "openai" and settings.openai_base_url is not None
        if field == "base_url" and key not in origins and borrowed:
            origin = f"openai_base_url, {origins['openai_base_url']}"
        if field == "wire_api" and settings.chat_completions and key not in origins:
            origin = f"chat_completions, {origins.get('chat_completions', _DEFAULT)}"
        rows.append((key, value, origin))
    return rows


def _catalog_rows(loaded: LoadedConfig, provider_id: str) -> list[Row]:
    """The context window and price a run would take from the model catalog, where config
    leaves them unset (compaction and --max-cost use them)."""
    from oiexec.catalog.facts import model_facts

    settings = loaded.settings
    if settings.model_context_window is not None and settings.model_pricing is not None:
        return []
    facts = model_facts(settings, provider_id)
    origin = f"model catalog ({settings.model} on {provider_id})"
    rows: list[Row] = []
    if settings.model_context_window is None and facts.context_window is not None:
        rows.append(("model_context_window", facts.context_window, origin))
    if settings.model_pricing is None and facts.price is not None:
        price = facts.price.model_dump(mode="json", exclude_none=True)
        rows.append(("model_pricing", price, origin))
    return rows
