"""A bad value is an error wherever it is set, even when a higher layer (or a flag) overrides
it: `-c sandbox_mode=bogus -s workspace-write` no longer runs (config/problems)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from oiexec.core.errors import ConfigError, ExitCode
from tests.config.conftest import Load, trust, write_project_config

ALLOWED = "'read-only', 'workspace-write' or 'danger-full-access'"


def test_an_overridden_bad_value_names_key_value_origin_and_the_choices(load: Load) -> None:
    with pytest.raises(ConfigError) as caught:
        load(overrides=("sandbox_mode=bogus",), flags={"sandbox_mode": "workspace-write"})
    assert caught.value.exit_code == ExitCode.CONFIG
    assert caught.value.message == (
        "invalid configuration:\n"
        f'  `sandbox_mode` in -c override: expected one of {ALLOWED}, got the string "bogus" '
        "(overridden by -s, but checked all the same)"
    )


def test_every_layer_is_checked_with_its_own_origin(load: Load, home: Path, project: Path) -> None:
    """User file, profile, project file and environment, each overridden by the one above."""
    user = trust(
        home,
        project,
        'sandbox_mode = "sometimes"\nprofile = "p"\n'
        '[profiles.p]\ntool_output_token_limit = "many"\n',
    )
    project_file = write_project_config(project, "hide_agent_reasoning = 2\n")
    environ = {"OIEXEC_SANDBOX_BACKEND": "docker"}
    with pytest.raises(ConfigError) as caught:
        load(
            environ=environ,
            overrides=(
                "tool_output_token_limit=5",
                "hide_agent_reasoning=true",
                "sandbox_backend='auto'",
            ),
            flags={"sandbox_mode": "read-only"},
        )
    text = caught.value.message
    assert f"`sandbox_mode` in {user}:1: expected one of {ALLOWED}" in text
    assert f"`tool_output_token_limit` in {user}:4: expected an integer" in text
    assert f"`hide_agent_reasoning` in {project_file}:1: expected a boolean" in text
    assert "`sandbox_backend` in environment variable OIEXEC_SANDBOX_BACKEND" in text
    assert "(overridden by -s, but" in text
    assert "(overridden by -c override, but" in text
    assert text.count("\n  `") == 4


def test_valid_overridden_values_and_split_tables_still_load(
    load: Load, home: Path, project: Path
) -> None:
    """A provider table completed by another layer, and good values overridden, are fine;
    so is a resumed session's value replaced by a flag, and an unknown key stays a warning."""
    trust(
        home,
        project,
        'sandbox_mode = "read-only"\nmystery = 1\n[model_providers.x]\nname = "X"\n',
    )
    loaded = load(
        overrides=("model_providers.x.base_url='http://127.0.0.1:9/v1'", "mystery=2"),
        flags={"sandbox_mode": "workspace-write"},
        session={"sandbox_mode": "old-mode-of-a-recorded-session"},
    )
    assert loaded.settings.sandbox_mode == "workspace-write"
    assert loaded.settings.model_providers["x"].base_url == "http://127.0.0.1:9/v1"
    assert any("mystery" in warning for warning in loaded.warnings)


def test_20000_overridden_bad_values_are_reported_in_bounded_time(load: Load, home: Path) -> None:
    """Each value is matched to its error by lookup: a search per error took 160 s here."""
    count = 20_000
    (home / "config.toml").write_text(
        "[features]\n" + "".join(f'f{i} = "x"\n' for i in range(count))
    )
    (home / "p.config.toml").write_text(
        "[features]\n" + "".join(f"f{i} = false\n" for i in range(count))
    )
    started = time.process_time()
    with pytest.raises(ConfigError) as caught:
        load(profile="p")
    elapsed = time.process_time() - started
    assert "`features.f0` in " in caught.value.message
    assert caught.value.message.endswith(f"... and {count - 20} more")
    assert elapsed < 8, elapsed  # about 0.5 s of CPU on the 2-core CI machine
