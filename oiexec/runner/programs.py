"""The run's programs (git, rg) resolved at its start, before the model runs, outside every
root a sandboxed command can write (oiexec.core.programs); and what `sandbox doctor` shows.

Untrusted for a run: the workspace and every extra root whatever the mode (an earlier
workspace-write run may have written there), and the writable roots of its mode (/tmp,
$TMPDIR and Landlock's extra roots such as /dev/shm in workspace-write). A PATH entry, hook
script or MCP command kept in /tmp is therefore refused by a workspace-write run only.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from oiexec.core import programs
from oiexec.core.policy import SandboxPolicy

__all__ = ["distrust_workspace", "programs_report", "trust_run_programs", "untrusted_run_roots"]


def untrusted_run_roots(policy: SandboxPolicy) -> list[Path]:
    from oiexec.sandbox import profiles
    from oiexec.sandbox.paths import real_writable_roots

    roots = [policy.cwd, *policy.extra_roots, *real_writable_roots(policy)]
    if policy.mode == "workspace-write":
        extra = profiles.policy_data().get("linux_extra_writable_roots", [])
        roots += [Path(p) for p in extra]
    return roots


def distrust_workspace(cwd: Path) -> None:
    """For commands that start programs without a run (`mcp list`): what a workspace-write
    run in `cwd` could write is untrusted."""
    programs.distrust(untrusted_run_roots(SandboxPolicy(mode="workspace-write", cwd=cwd)))


def trust_run_programs(policy: SandboxPolicy, program_paths: Mapping[str, str]) -> None:
    """Distrusts the run's roots, takes `program_paths` from config (raising `ConfigError`
    for a bad one), and resolves the run's programs now, once."""
    programs.distrust(untrusted_run_roots(policy))
    programs.use_paths(program_paths)
    for name in programs.RUN_PROGRAMS:
        programs.find(name)


def programs_report(policy: SandboxPolicy) -> dict[str, Any]:
    """`{"git": {...}, "rg": {...}, "bwrap": {...}}` as a run in `policy` would resolve them
    (with `program_paths` from the config there), and `note`, one line for the text report;
    unreadable config or a bad `program_paths` entry is its `error`."""
    from oiexec.config.loader import ConfigInputs, load_config
    from oiexec.core.errors import OiexecError
    from oiexec.sandbox import profiles

    try:
        paths = load_config(ConfigInputs(cwd=policy.cwd)).settings.program_paths
        trust_run_programs(policy, paths)
    except OiexecError as exc:
        return {"error": exc.message, "note": exc.message}
    found = programs.resolutions()
    fallbacks: list[str] = profiles.load("linux/bwrap.toml")["fallback_paths"]
    found.append(programs.resolve("bwrap", fallbacks=fallbacks))
    report: dict[str, Any] = {r.name: r.as_json() for r in found}
    report["note"] = ", ".join(
        f"{r.name}={r.path} ({r.source})"
        if r.path
        else f"{r.name}: not found outside the workspace and writable roots"
        for r in found
    )
    return report
