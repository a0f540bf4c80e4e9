"""Settings a layer cannot give itself: trust (only the user config grants it), and what
`--oss` and `OPENAI_BASE_URL` contribute and where they rank."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.config.conftest import Load, trust, write_project_config


@pytest.mark.parametrize("layer", ["override", "environment", "profile"])
def test_trust_set_outside_the_user_config_is_ignored_with_a_warning(
    load: Load, home: Path, project: Path, layer: str
) -> None:
    write_project_config(project, 'model = "planted"\n')
    entry = {str(project): {"trust_level": "trusted"}}
    if layer == "override":
        loaded = load(overrides=(f'projects."{project}".trust_level="trusted"',))
        where = "-c override"
    elif layer == "environment":
        loaded = load(environ={"OIEXEC_PROJECTS": json.dumps(entry)})
        where = "environment variable OIEXEC_PROJECTS"
    else:
        config = home / "config.toml"
        config.write_text(
            f'profile = "ci"\n[profiles.ci.projects."{project}"]\ntrust_level = "trusted"\n'
        )
        loaded = load()
        where = f"{config}:3"
    assert not loaded.trusted
    assert loaded.settings.model != "planted"
    assert loaded.settings.projects == {}
    assert (
        f'ignoring projects."{project}".trust_level from {where}: only '
        f"{home / 'config.toml'} can trust a project; {project} stays untrusted"
    ) in loaded.warnings


def test_the_user_config_still_trusts_and_an_override_cannot_untrust(
    load: Load, home: Path, project: Path
) -> None:
    trust(home, project)
    loaded = load(overrides=(f'projects."{project}".trust_level="untrusted"',))
    assert loaded.trusted
    assert loaded.settings.projects[str(project)].trust_level == "trusted"
    assert any(w.endswith(f"{project} stays trusted") for w in loaded.warnings)


@pytest.mark.parametrize(
    ("flags", "overrides", "model", "origin"),
    [
        ({"model_provider": "ollama"}, (), "gpt-oss:20b", "--oss default"),
        ({"model_provider": "lmstudio"}, (), "openai/gpt-oss-20b", "--oss default"),
        ({"model_provider": "ollama", "model": "qwen3"}, (), "qwen3", "command-line flag"),
        ({"model_provider": "ollama"}, ("model=qwen3",), "qwen3", "-c override"),
    ],
)
def test_oss_picks_the_default_open_model_unless_one_is_named(
    load: Load,
    home: Path,
    flags: dict[str, str],
    overrides: tuple[str, ...],
    model: str,
    origin: str,
) -> None:
    (home / "config.toml").write_text('model = "gpt-5.5"\n')
    loaded = load(flags=flags, overrides=overrides)
    assert loaded.settings.model == model
    assert loaded.origins["model"] == origin


def test_openai_base_url_variable_ranks_below_every_config_file(load: Load, home: Path) -> None:
    environ = {"OPENAI_BASE_URL": "http://from-variable/v1"}
    loaded = load(environ=environ)
    assert loaded.settings.openai_base_url == "http://from-variable/v1"
    assert loaded.origins["openai_base_url"] == "environment (OPENAI_BASE_URL)"
    (home / "config.toml").write_text('openai_base_url = "http://from-file/v1"\n')
    assert load(environ=environ).settings.openai_base_url == "http://from-file/v1"
    assert load(environ={"OPENAI_BASE_URL": "  "}).settings.openai_base_url == "http://from-file/v1"
    # Another provider: the variable is not read at all.
    (home / "config.toml").write_text('model_provider = "anthropic"\n')
    assert load(environ={"OPENAI_BASE_URL": "nonsense"}).settings.openai_base_url is None
