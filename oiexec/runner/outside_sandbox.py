"""What a run here would start outside the command sandbox: MCP servers, hook commands and
the `notify` program are started by oiexec itself with the user's rights, not through the
sandbox that confines the model's commands. `sandbox doctor` says so, naming them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["unsandboxed_report"]


def unsandboxed_report(workdir: Path) -> dict[str, dict[str, Any]]:
    """`{"mcp": ..., "hooks": ..., "notify": ...}`, each with `outside_sandbox`, what is
    configured here and a one-line `note`."""
    from oiexec.config.hook_table import HooksConfig
    from oiexec.config.loader import ConfigInputs, load_config
    from oiexec.core.errors import OiexecError
    from oiexec.runner.extras import hook_sources

    try:
        loaded = load_config(ConfigInputs(cwd=workdir))
        settings = loaded.settings
        servers = sorted(n for n, c in settings.mcp_servers.items() if c.enabled)
        configs = [config for _, config in hook_sources(loaded)]
    except OiexecError as exc:
        unreadable = f"config unreadable: {exc}"
        return {
            key: {"outside_sandbox": True, "configured": None, "note": unreadable}
            for key in ("mcp", "hooks", "notify")
        }
    hooks = sorted(
        {
            hook.command
            for config in configs
            for event in HooksConfig.model_fields
            for group in getattr(config, event)
            for hook in group.hooks
            if hook.command
        }
    )
    notify = list(settings.notify or [])
    return {
        "mcp": {
            "outside_sandbox": True,
            "servers": servers,
            "note": "MCP servers (and every process they start) run outside this sandbox"
            + (f": {', '.join(servers)}" if servers else "; none configured here"),
        },
        "hooks": {
            "outside_sandbox": True,
            "commands": hooks,
            "note": "hook commands run outside this sandbox"
            + (f": {len(hooks)} configured here" if hooks else "; none configured here"),
        },
        "notify": {
            "outside_sandbox": True,
            "command": notify or None,
            "note": "the notify program runs outside this sandbox"
            + (f": {notify[0]}" if notify else "; none configured here"),
        },
    }
