"""`interpreter harness list` and `interpreter harness show NAME`: the emulated harnesses,
their wires, completion rule and tools with their schemas (stdout: this is the command's
output, not a run's event stream)."""

from __future__ import annotations

import json
from typing import Any

import click


@click.group("harness", context_settings={"help_option_names": ["-h", "--help"]})
def harness_group() -> None:
    """List and inspect the agent harnesses a model can run in."""


def _tool_specs(harness_id: str) -> list[dict[str, Any]]:
    """Each tool as its `tools.json` declares it; a freeform tool's grammar is left out."""
    from oiexec.harness.data import load_spec, load_tool_schemas

    schemas = load_tool_schemas(harness_id)
    out: list[dict[str, Any]] = []
    for entry in load_spec(harness_id).tools:
        schema = schemas[entry.name]
        item: dict[str, Any] = {
            "name": entry.name,
            "impl": entry.impl,
            "type": schema.get("type", "function"),
            "description": schema.get("description", ""),
        }
        if "format" in schema:
            item["format"] = {k: v for k, v in schema["format"].items() if k != "definition"}
        else:
            item["parameters"] = schema.get("parameters", {})
        out.append(item)
    return out


@harness_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per harness.")
def list_command(as_json: bool) -> None:
    """Every harness with its wires and completion mode."""
    from oiexec.harness.data import harness_ids, load_spec

    for harness_id in harness_ids():
        spec = load_spec(harness_id)
        if as_json:
            record = {
                "id": spec.id,
                "wires": spec.wire,
                "action_format": spec.action_format,
                "completion": spec.completion.mode,
                "tools": [t.name for t in spec.tools],
                "description": spec.description,
            }
            click.echo(json.dumps(record))
            continue
        wires = ",".join(spec.wire)
        click.echo(f"{spec.id:<22} {wires:<25} {spec.completion.mode:<16} {spec.description}")


@harness_group.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="The whole description as JSON.")
def show_command(name: str, as_json: bool) -> None:
    """A harness's wires, completion mode and tools with their schemas."""
    from oiexec.harness.data import load_spec

    spec = load_spec(name)
    tools = _tool_specs(name)
    if as_json:
        payload = {
            "id": spec.id,
            "description": spec.description,
            "emulates": spec.emulates.model_dump(),
            "extends": spec.extends or None,
            "wires": spec.wire,
            "action_format": spec.action_format,
            "tools_advertised": spec.advertise_tools,
            "completion": spec.completion.model_dump(exclude={"format_error"}),
            "tools": tools,
        }
        click.echo(json.dumps(payload, indent=2))
        return
    emulates = spec.emulates
    click.echo(f"{spec.id}: {spec.description}")
    click.echo(f"emulates:     {emulates.product} {emulates.version}".rstrip())
    if spec.extends:
        click.echo(f"extends:      {spec.extends}")
    click.echo(f"wires:        {', '.join(spec.wire)}")
    advertised = "" if spec.advertise_tools else " (tools described in the prompt, not sent)"
    click.echo(f"actions:      {spec.action_format}{advertised}")
    completion = spec.completion
    detail = f" ({completion.marker})" if completion.marker else ""
    click.echo(f"completion:   {completion.mode}{detail}")
    click.echo("tools:")
    for tool in tools:
        click.echo(f"  {tool['name']}  -> {tool['impl']}")
        if "parameters" in tool:
            body = json.dumps(tool["parameters"], indent=2)
            click.echo("\n".join("    " + line for line in body.splitlines()))
        else:
            click.echo(f"    freeform: {json.dumps(tool.get('format', {}))}")
