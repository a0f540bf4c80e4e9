"""Helpers for the Python API tests: an `Agent` talking to the scripted model server."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from oiexec import Agent
from tests.support.model_server import ModelServer

MakeAgent = Callable[..., Agent]


def provider_config(server: ModelServer, **fields: Any) -> dict[str, Any]:
    """The `config` entries selecting a provider that points at `server` (what
    `server.config_args()` gives the CLI as `-c` flags)."""
    return {
        "model_provider": "scripted",
        "model_providers": {
            "scripted": {
                "name": "Scripted",
                "base_url": server.base_url,
                "wire_api": "responses",
                "stream_idle_timeout_ms": 10_000,
                **fields,
            }
        },
    }


@pytest.fixture
def make_agent(model_server: ModelServer, repo: Path) -> MakeAgent:
    """`Agent` on the scripted provider, in `repo`, danger-full-access unless overridden."""

    def make(**options: Any) -> Agent:
        config = {**provider_config(model_server), **options.pop("config", {})}
        options.setdefault("cwd", repo)
        options.setdefault("sandbox", "danger-full-access")
        return Agent(config=config, **options)

    return make


def running_commands(marker: str) -> list[int]:
    """Pids of live processes whose command line contains `marker`."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z":
            pids.append(int(entry))
    return pids


def wait_for_command(marker: str, limit_s: float = 30) -> list[int]:
    """`running_commands(marker)` once it finds any, or [] after `limit_s` seconds: generous,
    since a loaded machine can take seconds between the item starting and the spawn."""
    deadline = time.monotonic() + limit_s
    while not (found := running_commands(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found
