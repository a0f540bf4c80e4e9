"""The file and command-line layers: order, origins, profiles, project trust, bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from oiexec.config.overrides import parse_override
from oiexec.core.errors import ConfigError, ExitCode, UsageError
from tests.config.conftest import Load, trust, write_project_config
from tests.conftest import run_cli

# --- layering order and origins -----------------------------------------------------------


def test_defaults_alone(load: Load) -> None:
    loaded = load()
    assert loaded.settings.model == "gpt-5.5"
    # Only what exec forces: every run is headless.
    assert loaded.origins == {"approval_policy": "forced by exec"}
    assert loaded.warnings == []


def test_each_layer_beats_the_one_below(load: Load, home: Path, project: Path) -> None:
    user = trust(home, project, 'model = "user"\n[profiles.p]\nmodel = "profile-table"\n')
    profile_file = home / "p.config.toml"
    environ = {"OIEXEC_MODEL": "env"}

    def model(**inputs: object) -> tuple[str, str]:
        loaded = load(**inputs)  # type: ignore[arg-type]
        return loaded.settings.model, loaded.origins["model"]

    assert model() == ("user", f"user ({user}:1)")
    assert model(profile="p") == ("profile-table", f"profile p ({user}:3)")
    profile_file.write_text('\nmodel = "profile-file"\n')
    assert model(profile="p") == ("profile-file", f"profile p ({profile_file}:2)")
    project_file = write_project_config(project, 'model = "project"\n')
    assert model(profile="p") == ("project", f"project ({project_file}:1)")
    assert model(profile="p", environ=environ) == ("env", "environment (OIEXEC_MODEL)")
    overrides = ("model=dash-c",)
    assert model(environ=environ, overrides=overrides) == ("dash-c", "-c override")
    flags = {"model": "flag"}
    assert model(environ=environ, overrides=overrides, flags=flags) == (
        "flag",
        "command-line flag",
    )
    forced = {"model": "forced"}
    assert model(overrides=overrides, flags=flags, forced=forced) == ("forced", "forced by exec")


def test_tables_merge_key_by_key_and_origins_follow_each_leaf(
    load: Load, home: Path, project: Path
) -> None:
    user = trust(
        home,
        project,
        "[sandbox_workspace_write]\nnetwork_access = true\nwritable_roots = ['/a']\n",
    )
    project_file = write_project_config(
        project, "[sandbox_workspace_write]\nwritable_roots = ['/b']\n"
    )
    loaded = load(overrides=("sandbox_limits.max_processes=10",))
    workspace = loaded.settings.sandbox_workspace_write
    assert (workspace.network_access, workspace.writable_roots) == (True, ["/b"])
    assert loaded.origins["sandbox_workspace_write.network_access"] == f"user ({user}:2)"
    assert loaded.origins["sandbox_workspace_write.writable_roots"] == (
        f"project ({project_file}:2)"
    )
    assert loaded.origins["sandbox_limits.max_processes"] == "-c override"
    assert loaded.settings.sandbox_limits.max_processes == 10


def test_dotted_flags_nest(load: Load) -> None:
    loaded = load(flags={"sandbox_workspace_write.network_access": True, "model": None})
    assert loaded.settings.sandbox_workspace_write.network_access is True
    assert "model" not in loaded.origins  # a flag left unset is no layer


# --- profiles -----------------------------------------------------------------------------


def test_profile_table_then_profile_file(load: Load, home: Path) -> None:
    user = home / "config.toml"
    user.write_text('[profiles.ci]\nmodel = "table"\nmodel_verbosity = "low"\n')
    (home / "ci.config.toml").write_text('model = "file"\n')
    loaded = load(profile="ci")
    assert loaded.settings.model == "file"
    assert loaded.settings.model_verbosity == "low"
    assert loaded.origins["model_verbosity"] == f"profile ci ({user}:3)"


def test_profile_chosen_by_the_user_config(load: Load, home: Path) -> None:
    (home / "config.toml").write_text('profile = "ci"\n[profiles.ci]\nmodel = "from-ci"\n')
    assert load().settings.model == "from-ci"


def test_missing_profile_is_a_config_error(load: Load, home: Path) -> None:
    with pytest.raises(ConfigError, match="profile `nope` not found") as info:
        load(profile="nope")
    assert info.value.exit_code == ExitCode.CONFIG
    assert str(home / "nope.config.toml") in (info.value.hint or "")


def test_profile_that_is_not_a_table(load: Load, home: Path) -> None:
    (home / "config.toml").write_text('[profiles]\nci = "x"\n')
    with pytest.raises(ConfigError, match=r"\[profiles.ci\] .* is not a table"):
        load(profile="ci")


# --- project trust ------------------------------------------------------------------------


def test_untrusted_project_config_is_ignored_with_a_warning(load: Load, project: Path) -> None:
    write_project_config(project, 'model = "project"\n')
    loaded = load()
    assert loaded.settings.model == "gpt-5.5"
    assert not loaded.trusted
    [warning] = loaded.warnings
    assert "not trusted" in warning and f'[projects."{project}"]' in warning


def test_trust_covers_subdirectories_of_the_project(load: Load, home: Path, project: Path) -> None:
    trust(home, project)
    write_project_config(project, 'model = "project"\n')
    sub = project / "src" / "pkg"
    sub.mkdir(parents=True)
    loaded = load(cwd=sub)
    assert (loaded.project_root, loaded.trusted) == (project, True)
    assert loaded.settings.model == "project"


def test_trust_comes_from_the_user_config_only(load: Load, project: Path) -> None:
    """Neither the project itself nor the environment can vouch for the project."""
    write_project_config(project, f'[projects."{project}"]\ntrust_level = "trusted"\n')
    environ = {"OIEXEC_PROJECTS": f'{{"{project}": {{"trust_level": "trusted"}}}}'}
    assert not load(environ=environ).trusted


def test_project_config_through_a_symlink_is_ignored(load: Load, home: Path, project: Path) -> None:
    trust(home, project)
    (project / "cfg").mkdir()
    (project / "cfg" / "config.toml").write_text('model = "planted"\n')
    (project / ".openinterpreter").symlink_to("cfg")
    loaded = load()
    assert loaded.settings.model == "gpt-5.5"
    assert any("symbolic link" in warning for warning in loaded.warnings)


def test_an_empty_git_directory_is_not_a_project_root(load: Load, tmp_path: Path) -> None:
    outside = tmp_path / "plain"
    (outside / ".git").mkdir(parents=True)  # e.g. a sandbox mount point left behind
    assert load(cwd=outside).project_root == outside
    assert load(cwd=outside / ".git").project_root == outside / ".git"


# --- -c overrides -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("model=gpt-5", ["model"], "gpt-5"),  # not TOML: taken as a string
        ('model="gpt 5"', ["model"], "gpt 5"),
        ("a.b=true", ["a", "b"], True),
        ("n = 3", ["n"], 3),
        ('list=["x", "y"]', ["list"], ["x", "y"]),
        ('projects."/a/b.c".trust_level=trusted', ["projects", "/a/b.c", "trust_level"], "trusted"),
        ("key=", ["key"], ""),
    ],
)
def test_override_parsing(text: str, key: list[str], value: object) -> None:
    assert parse_override(text) == (key, value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("model", "Invalid --config value `model`"),
        ("=x", "Invalid --config value `=x`"),
        ("a..b=1", "empty segment"),
        ("'a.b=1", "unterminated quote"),
    ],
)
def test_bad_overrides_are_usage_errors(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message) as info:
        parse_override(text)
    assert info.value.exit_code == ExitCode.USAGE


def test_override_values_are_validated(load: Load) -> None:
    with pytest.raises(ConfigError, match=r"`sandbox_limits.max_processes` in -c override"):
        load(overrides=("sandbox_limits.max_processes=-1",))


# --- bad input ----------------------------------------------------------------------------


def test_bad_toml_names_the_file_and_line(load: Load, home: Path) -> None:
    user = home / "config.toml"
    user.write_text('model = "x"\nmodel_provider = \n')
    with pytest.raises(ConfigError, match=rf"invalid TOML in {user}: .*line 2") as info:
        load()
    assert info.value.exit_code == ExitCode.CONFIG


def test_wrong_type_names_the_file_line_and_key(load: Load, home: Path) -> None:
    user = home / "config.toml"
    user.write_text("[sandbox_workspace_write]\n\nnetwork_access = 'sometimes'\n")
    with pytest.raises(ConfigError) as info:
        load()
    assert f"`sandbox_workspace_write.network_access` in {user}:3" in info.value.message
    assert 'got the string "sometimes"' in info.value.message


def test_unknown_key_warns_and_is_dropped(load: Load, home: Path) -> None:
    user = home / "config.toml"
    user.write_text('modle = "typo"\n[sandbox_limits]\nmax_procs = 3\n')
    loaded = load()
    assert loaded.warnings == [
        f"ignoring unknown config key `modle` ({user}:1)",
        f"ignoring unknown config key `sandbox_limits.max_procs` ({user}:3)",
    ]
    assert loaded.settings.model == "gpt-5.5"


def test_unknown_key_in_a_file_is_an_error_when_strict(load: Load, home: Path) -> None:
    user = home / "config.toml"
    user.write_text('\nmodle = "typo"\n')
    with pytest.raises(ConfigError, match=rf"unknown config key `modle` in {user}:2"):
        load(strict=True)


def test_unknown_override_key_only_warns_even_when_strict(load: Load) -> None:
    loaded = load(overrides=("modle=typo",), strict=True)
    assert loaded.warnings == ["ignoring unknown config key `modle` (-c override)"]


def test_unknown_keys_inside_provider_tables(load: Load, home: Path) -> None:
    user = home / "config.toml"
    user.write_text('[model_providers.mine]\nbase_url = "http://x"\nbase_ulr = "typo"\n')
    loaded = load()
    assert loaded.warnings == [
        f"ignoring unknown config key `model_providers.mine.base_ulr` ({user}:3)"
    ]
    assert loaded.settings.model_providers["mine"].base_url == "http://x"


def test_bad_config_file_exits_3_through_the_cli(tmp_path: Path, oi_home: Path) -> None:
    (oi_home / "config.toml").write_text("model = [\n")
    result = run_cli(["config", "show"], cwd=tmp_path)
    assert result.returncode == ExitCode.CONFIG
    assert f"invalid TOML in {oi_home / 'config.toml'}" in result.stderr
