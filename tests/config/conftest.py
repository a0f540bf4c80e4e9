"""A home and a project on disk, and `load` to run the loader on them with a chosen environment."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

import pytest

from oiexec.config.loader import ConfigInputs, LoadedConfig, load_config


class Load(Protocol):
    def __call__(
        self, *, environ: Mapping[str, str] | None = None, **inputs: Any
    ) -> LoadedConfig: ...


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A repository root (a `.git` with HEAD is all the loader looks for)."""
    path = tmp_path / "project"
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return path


@pytest.fixture
def load(home: Path, project: Path) -> Load:
    def run(*, environ: Mapping[str, str] | None = None, **inputs: Any) -> LoadedConfig:
        inputs.setdefault("cwd", project)
        return load_config(ConfigInputs(**inputs), home=home, environ=environ or {})

    return run


def trust(home: Path, project: Path, extra: str = "") -> Path:
    """Writes a user config trusting `project`; returns its path."""
    config = home / "config.toml"
    config.write_text(f'{extra}\n[projects."{project}"]\ntrust_level = "trusted"\n')
    return config


def write_project_config(project: Path, text: str) -> Path:
    path = project / ".openinterpreter" / "config.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path
