"""The environment layer: OIEXEC_<KEY> / OPENINTERPRETER_<KEY>, its place, origins and errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from oiexec.config import environment
from oiexec.config.environment import (
    HOME_ENV,
    NOT_CONFIG,
    RETRY_BASE_DELAY_ENV,
    default_home,
)
from oiexec.core.errors import ConfigError, ExitCode
from oiexec.sandbox import fault_switches
from tests.config.conftest import Load, trust, write_project_config
from tests.conftest import run_cli


def test_a_variable_sets_a_key_and_is_its_origin(load: Load) -> None:
    loaded = load(environ={"OIEXEC_MODEL": "from-env", "OIEXEC_MODEL_CONTEXT_WINDOW": "4096"})
    assert loaded.settings.model == "from-env"
    assert loaded.settings.model_context_window == 4096
    assert loaded.origins["model"] == "environment (OIEXEC_MODEL)"
    assert loaded.origins["model_context_window"] == "environment (OIEXEC_MODEL_CONTEXT_WINDOW)"


def test_nested_keys_use_a_double_underscore(load: Load) -> None:
    environ = {
        "OIEXEC_SANDBOX_WORKSPACE_WRITE__NETWORK_ACCESS": "true",
        "OIEXEC_SANDBOX_MODE": "workspace-write",
        "OIEXEC_MODEL_PROVIDERS__CI__BASE_URL": "http://127.0.0.1:9/v1",
        "OIEXEC_FEATURES__WEB": "false",
    }
    loaded = load(environ=environ)
    settings = loaded.settings
    assert settings.sandbox_workspace_write.network_access is True
    assert settings.sandbox_mode == "workspace-write"
    assert settings.model_providers["ci"].base_url == "http://127.0.0.1:9/v1"
    assert settings.features == {"web": False}
    assert loaded.origins["sandbox_workspace_write.network_access"] == (
        "environment (OIEXEC_SANDBOX_WORKSPACE_WRITE__NETWORK_ACCESS)"
    )
    assert loaded.origins["model_providers.ci.base_url"] == (
        "environment (OIEXEC_MODEL_PROVIDERS__CI__BASE_URL)"
    )


def test_tables_and_lists_may_be_given_as_json(load: Load) -> None:
    environ = {
        "OIEXEC_SANDBOX_WORKSPACE_WRITE": '{"network_access": true}',
        "OIEXEC_SANDBOX_WORKSPACE_WRITE__WRITABLE_ROOTS": '["/data", "/cache"]',
    }
    loaded = load(environ=environ)
    workspace = loaded.settings.sandbox_workspace_write
    assert (workspace.network_access, workspace.writable_roots) == (True, ["/data", "/cache"])
    # Each key names the most specific variable that set it.
    assert loaded.origins["sandbox_workspace_write.network_access"] == (
        "environment (OIEXEC_SANDBOX_WORKSPACE_WRITE)"
    )
    assert loaded.origins["sandbox_workspace_write.writable_roots"] == (
        "environment (OIEXEC_SANDBOX_WORKSPACE_WRITE__WRITABLE_ROOTS)"
    )


def test_openinterpreter_prefix_is_accepted_and_oiexec_wins(load: Load) -> None:
    environ = {
        "OPENINTERPRETER_MODEL": "alias",
        "OIEXEC_MODEL": "own",
        "OPENINTERPRETER_MODEL_VERBOSITY": "high",
    }
    loaded = load(environ=environ)
    assert loaded.settings.model == "own"
    assert loaded.origins["model"] == "environment (OIEXEC_MODEL)"
    assert loaded.settings.model_verbosity == "high"
    assert loaded.origins["model_verbosity"] == "environment (OPENINTERPRETER_MODEL_VERBOSITY)"


def test_place_between_project_config_and_overrides(load: Load, home: Path, project: Path) -> None:
    trust(home, project)
    write_project_config(project, 'model = "project"\nmodel_verbosity = "low"\n')
    environ = {"OIEXEC_MODEL": "env", "OIEXEC_MODEL_VERBOSITY": "high"}
    loaded = load(environ=environ, overrides=("model_verbosity=medium",))
    assert loaded.settings.model == "env"  # beats the project
    assert loaded.settings.model_verbosity == "medium"  # -c beats the environment
    assert load(environ=environ, flags={"model": "flag"}).settings.model == "flag"


def test_empty_variables_count_as_unset(load: Load, home: Path) -> None:
    (home / "config.toml").write_text('model = "user"\n')
    loaded = load(environ={"OIEXEC_MODEL": "", "OPENINTERPRETER_MODEL": ""})
    assert loaded.settings.model == "user"


def test_names_after_the_prefix_ignore_case(load: Load) -> None:
    loaded = load(environ={"OIEXEC_Model": "mixed"})
    assert loaded.settings.model == "mixed"
    assert loaded.origins["model"] == "environment (OIEXEC_Model)"


def test_a_variable_selects_the_profile_and_the_flag_beats_it(load: Load, home: Path) -> None:
    (home / "config.toml").write_text(
        'profile = "a"\n[profiles.a]\nmodel = "from-a"\n[profiles.b]\nmodel = "from-b"\n'
    )
    assert load(environ={"OIEXEC_PROFILE": "b"}).settings.model == "from-b"
    assert load(environ={"OPENINTERPRETER_PROFILE": "b"}).settings.model == "from-b"
    assert load(environ={"OIEXEC_PROFILE": "b"}, profile="a").settings.model == "from-a"
    with pytest.raises(ConfigError, match="profile `nope` not found"):
        load(environ={"OIEXEC_PROFILE": "nope"})


# --- variables that are not config keys ---------------------------------------------------


def test_variables_that_are_not_config_keys_are_left_alone(load: Load) -> None:
    environ = {
        "OPENINTERPRETER_HOME": "/elsewhere",
        "OIEXEC_DEBUG": "1",
        "OIEXEC_SANDBOX_TEST_HOOKS": "1",
        "OIEXEC_RETRY_BASE_DELAY_MS": "1",
        "OIEXEC_UPDATE_GOLDEN": "1",
        "OPENINTERPRETER_SANDBOX": "read-only",
        "OPENINTERPRETER_SANDBOX_NETWORK_DISABLED": "1",
        "OPENINTERPRETER_THREAD_ID": "0199a213-81c0-7800-8aa1-bbab2a035a53",
        "CODEX_API_KEY": "sk-codex",
        "OPENAI_API_KEY": "sk-openai",
        "ANTHROPIC_API_KEY": "sk-anthropic",
        "MODEL": "not-prefixed",
    }
    loaded = load(environ=environ)
    # Only what exec forces: every run is headless.
    assert loaded.origins == {"approval_policy": "forced by exec"}
    assert loaded.warnings == []
    assert loaded.settings == load().settings


def test_excluded_names_are_never_read_even_if_they_name_a_key(
    load: Load, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The exclusion is by name, not by luck: a key added later under an excluded name
    (as `OIEXEC_MODEL` is made one here) is still not read from the environment."""
    monkeypatch.setattr(environment, "NOT_CONFIG", NOT_CONFIG | {"OIEXEC_MODEL"})
    loaded = load(environ={"OIEXEC_MODEL": "excluded", "OPENINTERPRETER_MODEL": "alias"})
    assert loaded.settings.model == "alias"


def test_the_exclusions_name_the_variables_other_modules_read() -> None:
    assert {HOME_ENV, RETRY_BASE_DELAY_ENV, fault_switches.SWITCH} <= NOT_CONFIG


def test_home_comes_from_its_variable(tmp_path: Path) -> None:
    assert default_home({HOME_ENV: str(tmp_path)}) == tmp_path
    assert default_home({}) == Path.home() / ".openinterpreter"


# --- bad values ---------------------------------------------------------------------------


def test_a_wrong_type_names_the_variable_and_key(load: Load) -> None:
    with pytest.raises(ConfigError) as info:
        load(environ={"OIEXEC_SANDBOX_WORKSPACE_WRITE__NETWORK_ACCESS": "sometimes"})
    assert info.value.exit_code == ExitCode.CONFIG
    assert (
        "`sandbox_workspace_write.network_access` in environment variable "
        "OIEXEC_SANDBOX_WORKSPACE_WRITE__NETWORK_ACCESS" in info.value.message
    )
    assert 'got the string "sometimes"' in info.value.message


def test_a_bad_choice_names_the_variable(load: Load) -> None:
    with pytest.raises(ConfigError, match="`sandbox_mode` in environment variable OIEXEC_SAND"):
        load(environ={"OIEXEC_SANDBOX_MODE": "wide-open"})


def test_bad_json_names_the_variable_and_key(load: Load) -> None:
    with pytest.raises(ConfigError) as info:
        load(environ={"OIEXEC_SANDBOX_WORKSPACE_WRITE__WRITABLE_ROOTS": "/data"})
    assert info.value.message.startswith(
        "invalid configuration: `sandbox_workspace_write.writable_roots` in environment "
        "variable OIEXEC_SANDBOX_WORKSPACE_WRITE__WRITABLE_ROOTS: not valid JSON"
    )
    assert '["/data"]' in (info.value.hint or "")


def test_unknown_nested_key_warns_and_is_an_error_when_strict(load: Load) -> None:
    environ = {"OIEXEC_SANDBOX_WORKSPACE_WRITE__NETWORK": "true"}
    loaded = load(environ=environ)
    assert loaded.warnings == [
        "ignoring unknown config key `sandbox_workspace_write.network` "
        "(environment variable OIEXEC_SANDBOX_WORKSPACE_WRITE__NETWORK)"
    ]
    with pytest.raises(ConfigError, match="in environment variable OIEXEC_SANDBOX_WORKSPACE_WR"):
        load(environ=environ, strict=True)


def test_an_oiexec_variable_that_names_no_key_is_an_unknown_key(load: Load) -> None:
    """`OIEXEC_` is this program's own prefix, so a name that is no key is a typo; the
    shared `OPENINTERPRETER_` prefix is not judged."""
    environ = {"OIEXEC_MODLE": "typo", "OPENINTERPRETER_SOMETHING_ELSE": "1"}
    loaded = load(environ=environ)
    assert loaded.warnings == [
        "ignoring unknown config key `modle` (environment variable OIEXEC_MODLE)"
    ]
    assert loaded.settings == load().settings
    with pytest.raises(ConfigError, match="unknown config key `modle` in environment variable"):
        load(environ=environ, strict=True)


# --- through the CLI ----------------------------------------------------------------------


def test_config_show_origins_names_the_variable(tmp_path: Path) -> None:
    environ = {"OIEXEC_MODEL": "env-model", "OPENINTERPRETER_SANDBOX_MODE": "read-only"}
    result = run_cli(["config", "show", "--origins"], cwd=tmp_path, env=environ)
    assert result.returncode == 0, result.stderr
    lines = {line.split(" = ")[0]: line for line in result.stdout.splitlines() if " = " in line}
    assert lines["model"].startswith('model = "env-model"')
    assert lines["model"].endswith("# environment (OIEXEC_MODEL)")
    assert lines["sandbox_mode"].endswith("# environment (OPENINTERPRETER_SANDBOX_MODE)")


def test_a_bad_variable_exits_3(tmp_path: Path) -> None:
    result = run_cli(["config", "show"], cwd=tmp_path, env={"OIEXEC_SANDBOX_MODE": "bogus"})
    assert result.returncode == ExitCode.CONFIG
    assert "environment variable OIEXEC_SANDBOX_MODE" in result.stderr
