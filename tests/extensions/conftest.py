"""Helpers shared by the skills, hooks and notify tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_skill(root: Path, folder: str, name: str, description: str, body: str) -> Path:
    """A skill folder under `root` with a SKILL.md; returns the SKILL.md path."""
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\n\n{body}\n")
    return path


def trust(oi_home: Path, project: Path) -> None:
    """Marks `project` trusted in the user config."""
    config = oi_home / "config.toml"
    previous = config.read_text() if config.exists() else ""
    config.write_text(f'{previous}\n[projects."{project}"]\ntrust_level = "trusted"\n')


def write_hooks(path: Path, hooks: dict[str, Any]) -> None:
    """A hooks.json in Codex's shape: {"hooks": {Event: [groups]}}."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hooks": hooks}))


def command_hook(
    command: str, matcher: str | None = None, timeout: float | None = None
) -> dict[str, Any]:
    hook: dict[str, Any] = {"type": "command", "command": command}
    if timeout is not None:
        hook["timeout"] = timeout
    group: dict[str, Any] = {"hooks": [hook]}
    if matcher is not None:
        group["matcher"] = matcher
    return group


def texts(body: dict[str, Any]) -> str:
    """Every text of a request body (any wire), joined: what the model was shown."""
    return json.dumps(body)
