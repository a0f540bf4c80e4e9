"""`interpreter sessions list` and `interpreter sessions show ID`: what a pipeline resumes.

Both print to stdout (this is the command's output, not a run's event stream); `--json`
prints the documented shape of `oiexec.session.views`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click


@click.group("sessions", context_settings={"help_option_names": ["-h", "--help"]})
def sessions_group() -> None:
    """List and inspect saved sessions (the ones `resume` continues)."""


def _home() -> Path:
    from oiexec.config.environment import default_home

    return default_home(os.environ)


@sessions_group.command("list")
@click.option("--json", "as_json", is_flag=True, help='Print {"sessions": [...]} as JSON.')
@click.option("--all", "all_cwds", is_flag=True, help="Sessions of every directory.")
@click.option(
    "-C",
    "--cd",
    "cd",
    type=click.Path(file_okay=False, exists=True, path_type=str),
    help="List the sessions of this directory instead of the current one.",
)
@click.option("-n", "limit", type=click.IntRange(min=1), help="At most N sessions, newest first.")
def list_command(as_json: bool, all_cwds: bool, cd: str | None, limit: int | None) -> None:
    """Sessions last run in this directory (all with --all), newest first."""
    from oiexec.session.index import list_sessions
    from oiexec.session.views import session_summary

    cwd = Path(os.path.abspath(cd or Path.cwd()))
    infos = list_sessions(_home(), cwd=None if all_cwds else cwd)
    if limit is not None:
        infos = infos[:limit]
    rows = [session_summary(info) for info in infos]
    if as_json:
        click.echo(json.dumps({"sessions": rows}, indent=2))
        return
    if not rows:
        where = "" if all_cwds else f" in {cwd} (--all lists every directory)"
        click.echo(f"no sessions{where}", err=True)
        return
    click.echo(_table(rows, show_cwd=all_cwds))


def _table(rows: list[dict[str, Any]], *, show_cwd: bool) -> str:
    from oiexec.core.costs import show_usd

    header = [
        "ID",
        "UPDATED",
        "MODEL",
        "RUNS",
        "OUTCOME",
        "COST",
        *(["CWD"] if show_cwd else []),
        "PROMPT",
    ]
    lines = [header]
    for row in rows:
        lines.append(
            [
                row["id"],
                row["updated_at"].replace("T", " ").removesuffix("Z")[:16],
                row["model"] or "-",
                str(row["runs"]),
                _outcome(row["status"], row["exit_code"]),
                show_usd(row["cost_usd"]),
                *([row["cwd"] or "-"] if show_cwd else []),
                row["first_prompt"] or "",
            ]
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header) - 1)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=False))
        + "  "
        + line[-1]
        for line in lines
    ).rstrip()


def _outcome(status: str, exit_code: int | None) -> str:
    return status if exit_code is None else f"{status} ({exit_code})"


@sessions_group.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print the session as one JSON object.")
@click.argument("session_id")
def show_command(as_json: bool, session_id: str) -> None:
    """A session's settings, runs, items, usage and outcome."""
    from oiexec.core.errors import SessionError
    from oiexec.session.index import find_rollout
    from oiexec.session.views import session_detail

    path = find_rollout(_home(), session_id)
    if path is None:
        raise SessionError(
            f"no rollout found for thread id {session_id}",
            hint="`interpreter sessions list --all` lists the saved sessions.",
        )
    detail = session_detail(path)
    if as_json:
        click.echo(json.dumps(detail, indent=2))
        return
    click.echo(_render(detail))


def _render(detail: dict[str, Any]) -> str:
    from oiexec.core.costs import show_usd

    settings = detail["settings"]
    roots = settings["writable_roots"]
    usage = detail["usage"]
    fields = [
        ("session id", detail["id"]),
        ("path", detail["path"]),
        ("created", detail["created_at"] or "-"),
        ("workdir", detail["cwd"] or "-"),
        ("provider", detail["model_provider"] or "-"),
        ("model", settings["model"] or "-"),
        ("harness", settings["harness"] or "-"),
        ("sandbox", settings["sandbox_mode"] or "-"),
        ("writable roots", ", ".join(roots) if roots else "-"),
        ("reasoning effort", settings["reasoning_effort"] or "default"),
        ("output schema", "yes" if settings["output_schema"] else "no"),
        ("runs", str(len(detail["runs"]))),
        ("usage", f"{usage['input_tokens']} input, {usage['output_tokens']} output tokens"),
        ("cost", show_usd(detail["cost_usd"])),
        ("outcome", _outcome(detail["status"], detail["exit_code"])),
    ]
    if detail["failure"]:
        fields.append(("failure", detail["failure"]))
    if detail["forked_from_id"]:
        fields.append(("forked from", detail["forked_from_id"]))
    lines = [f"{name}: {value}" for name, value in fields]
    for number, run in enumerate(detail["runs"], start=1):
        lines.append("")
        prompt = " ".join((run["prompt"] or "").split())
        lines.append(f"turn {number}: {_outcome(run['status'], run['exit_code'])}: {prompt}")
        if run["status"] != "incomplete":  # a killed run recorded nothing
            lines.append(f"  cost: {show_usd(run['cost_usd'])}")
        for override in run["overrides"]:
            if isinstance(override, dict):
                lines.append(
                    f"  override: {override.get('name')} {override.get('before')} -> "
                    f"{override.get('after')} (from {override.get('source')})"
                )
        lines.extend(f"  {_item_line(item)}" for item in run["items"])
    return "\n".join(lines)


def _item_line(item: dict[str, Any]) -> str:
    kind = str(item.get("type"))
    if kind == "command_execution":
        return f"command: {item.get('command')} (exit {item.get('exit_code')})"
    if kind == "file_change":
        paths = ", ".join(str(c.get("path")) for c in item.get("changes") or [])
        return f"file change: {paths}"
    text = item.get("text") or item.get("message") or ""
    short = " ".join(str(text).split())
    return f"{kind}: {short[:117] + '…' if len(short) > 120 else short}"
