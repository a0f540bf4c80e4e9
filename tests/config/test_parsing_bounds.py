"""Config parsing never crashes and never takes long: a TOML nested 10 000 deep, JSON as deep
in a variable, a `-c` key of 10 000 parts, bytes that are not UTF-8 in a variable, header
values a request cannot carry, 20 000 unknown keys: each is a config error (or a bounded
report) naming where, in well under a second of CPU. And `-c profile=X` selects the profile
as `-p X` does."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from oiexec.config.effects import RunFacts, no_effect_notes
from oiexec.config.loader import LoadedConfig
from oiexec.config.problems import REPORTED
from oiexec.config.providers import resolve_api_key, resolve_provider
from oiexec.core.errors import ConfigError
from tests.config.conftest import Load

#: CPU seconds one load may take (the target is one second of wall time; a load of 20 000
#: keys takes about 0.5 s of CPU on the 2-core CI machine; CPU time is not inflated by the
#: other tests running at the same time).
_CPU_BOUND_S = 2.0
_DEEP = 10_000


def _timed(action: Callable[[], Any]) -> tuple[Any, float]:
    start = time.process_time()
    try:
        return action(), time.process_time() - start
    except ConfigError as exc:
        return exc, time.process_time() - start


@pytest.mark.parametrize(
    "text",
    [
        "x = " + "[" * _DEEP + "]" * _DEEP,
        "x = " + "{a = " * _DEEP + "1" + "}" * _DEEP,
        ".".join(["a"] * _DEEP) + " = 1",
        "[" + ".".join(["tools"] * _DEEP) + "]\nb = 1",
        'model = "m"\n[features]\n' + "x." * _DEEP + "y = true",
    ],
    ids=["arrays", "inline-tables", "dotted-key", "table-header", "line-3"],
)
def test_a_deeply_nested_file_is_a_config_error_naming_it(
    load: Load, home: Path, text: str
) -> None:
    (home / "config.toml").write_text(text)
    error, cpu = _timed(load)
    assert isinstance(error, ConfigError)
    assert f"invalid TOML in {home / 'config.toml'}" in error.message
    assert "nested more than 64 levels deep" in error.message
    assert cpu < _CPU_BOUND_S
    if text.startswith("model"):
        assert "line 3" in error.message


def test_a_config_as_deep_as_allowed_still_loads(load: Load, home: Path) -> None:
    (home / "config.toml").write_text("tools." + ".".join(["a"] * 60) + " = 1\n")
    assert load().settings.tools["a"]["a"]


@pytest.mark.parametrize(
    ("override", "said"),
    [
        ("tools.x=" + "[" * _DEEP, "-c value `[[["),
        ("tools.x=" + "{a=" * 100 + "1" + "}" * 100, "nested more than 64 levels deep"),
        ("tools." + "a." * _DEEP + "b=1", "a config key has at most 64"),
    ],
    ids=["value", "inline-table", "key"],
)
def test_a_deeply_nested_override_is_a_config_error(load: Load, override: str, said: str) -> None:
    error, cpu = _timed(lambda: load(overrides=(override, override)))
    assert isinstance(error, ConfigError)
    assert said in error.message
    assert cpu < _CPU_BOUND_S


def test_a_nul_character_anywhere_is_a_config_error_naming_the_key(load: Load, home: Path) -> None:
    """TOML can write `\\u0000`; no path, command or name can hold it (a writable root with
    one was an internal error when the sandbox was built)."""
    with pytest.raises(ConfigError) as caught:
        load(overrides=('sandbox_workspace_write.writable_roots=["/x", "a\\u0000b"]',))
    assert caught.value.message == (
        "`sandbox_workspace_write.writable_roots[1]` in -c override holds a NUL character"
    )
    (home / "config.toml").write_text('model = "m"\n[tools]\nx = { "a\\u0000" = 1 }\n')
    with pytest.raises(ConfigError) as caught:
        load()
    assert caught.value.message == (
        f"`tools.x.a\\0` in {home / 'config.toml'}:3 holds a NUL character"
    )


def test_deep_json_in_a_variable_names_the_variable(load: Load) -> None:
    for depth in (_DEEP, 100):
        text = '{"a":' * depth + "1" + "}" * depth
        with pytest.raises(ConfigError) as caught:
            load(environ={"OIEXEC_TOOLS": text})
        error = caught.value
        assert "OIEXEC_TOOLS" in error.message


def test_a_variable_that_is_not_utf8_names_the_variable(load: Load) -> None:
    for environ in ({"OIEXEC_MODEL": "gpt\udcff"}, {"OIEXEC_X\udcff": "1"}):
        with pytest.raises(ConfigError) as caught:
            load(environ=environ)
        error = caught.value
        assert "is not valid UTF-8" in error.message
        assert "OIEXEC_" in error.message
        error.render().encode("utf-8")  # the message itself can be printed


# --- 20 000 keys -------------------------------------------------------------------------


def _notes(loaded: LoadedConfig, *, strict: bool = False) -> list[str]:
    return no_effect_notes(
        loaded.settings, loaded.layers, loaded.ignored, RunFacts(), strict=strict
    )


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("".join(f"unknown_{i} = {i}\n" for i in range(20_000)), "unknown config keys"),
        ("[features]\n" + "".join(f"f{i} = true\n" for i in range(20_000)), "unknown features"),
    ],
    ids=["top-level", "features"],
)
def test_twenty_thousand_unknown_keys_are_reported_briefly_and_fast(
    load: Load, home: Path, text: str, kind: str
) -> None:
    (home / "config.toml").write_text(text)
    loaded, cpu = _timed(load)
    assert cpu < _CPU_BOUND_S
    assert isinstance(loaded, LoadedConfig)
    reported = [w for w in loaded.warnings if "unknown" in w]
    assert len(reported) == REPORTED + 1
    line = REPORTED + text.startswith("[")  # named by file and line
    assert reported[REPORTED - 1].endswith(f"config.toml:{line})")
    assert reported[-1] == f"ignoring {20_000 - REPORTED} more {kind}"


def test_twenty_thousand_keys_codex_knows_are_noted_briefly_and_fast(
    load: Load, home: Path
) -> None:
    (home / "config.toml").write_text("[desktop]\n" + "".join(f"k{i} = 1\n" for i in range(20_000)))
    notes, cpu = _timed(lambda: _notes(load()))
    assert cpu < _CPU_BOUND_S
    assert len(notes) == REPORTED + 1
    assert notes[0].startswith("desktop.k0: accepted for compatibility")
    assert notes[-1].startswith(f"{20_000 - REPORTED} more keys")
    error, _ = _timed(lambda: _notes(load(), strict=True))
    assert isinstance(error, ConfigError)
    assert error.message.count("\n") == REPORTED + 1
    assert f"... and {20_000 - REPORTED} more" in error.message


def test_twenty_thousand_bad_values_are_listed_briefly(load: Load, home: Path) -> None:
    (home / "config.toml").write_text(
        "[features]\n" + "".join(f'f{i} = "yes"\n' for i in range(20_000))
    )
    error, cpu = _timed(load)
    assert isinstance(error, ConfigError)
    assert cpu < _CPU_BOUND_S
    assert error.message.count("\n") == REPORTED + 1
    assert f"... and {20_000 - REPORTED} more" in error.message


# --- headers -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("override", "said"),
    [
        ('model_providers.p.http_headers.X-Team="Zürich"', "header `X-Team` has a value with 'ü'"),
        ('model_providers.p.http_headers.X-A="a\\nb"', "header `X-A` has a value with '\\n'"),
        ('model_providers.p.http_headers."X A"="v"', "header name 'X A' is not"),
        ('model_providers.p.env_http_headers."Ü"="VAR"', "header name 'Ü' is not"),
        ('mcp_servers.m.http_headers.X="é"', "header `X` has a value"),
    ],
)
def test_a_header_a_request_cannot_carry_is_a_config_error(
    load: Load, override: str, said: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load(overrides=(override, 'mcp_servers.m.url="http://127.0.0.1:9/mcp"'))
    assert said in caught.value.message
    assert "in -c override" in caught.value.message


def test_a_bearer_token_that_cannot_be_sent_is_refused_without_showing_it(load: Load) -> None:
    with pytest.raises(ConfigError) as caught:
        load(overrides=('model_providers.p.experimental_bearer_token="sk-sécret"',))
    assert "experimental_bearer_token" in caught.value.message
    assert "sécret" not in caught.value.render()


def test_credentials_and_headers_from_the_environment_are_checked_where_they_are_read(
    load: Load, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = load(
        overrides=(
            "model_provider=p",
            'model_providers.p.base_url="http://127.0.0.1:9/v1"',
            'model_providers.p.env_key="P_KEY"',
            'model_providers.p.env_http_headers.X-Org="P_ORG"',
        )
    ).settings
    provider_id, provider = resolve_provider(settings)
    monkeypatch.setenv("P_KEY", "sk-abc\udcffdef")
    with pytest.raises(ConfigError) as caught:
        resolve_api_key(provider_id, provider)
    assert "`P_KEY`" in caught.value.message and "position 7" in caught.value.message
    assert "abc" not in caught.value.render()
    monkeypatch.setenv("P_KEY", "sk-abc")
    monkeypatch.setenv("P_ORG", "Zürich")
    with pytest.raises(ConfigError, match="`P_ORG` \\(env_http_headers `X-Org`\\)"):
        resolve_api_key(provider_id, provider)
    monkeypatch.setenv("P_ORG", "zurich")
    assert resolve_api_key(provider_id, provider) == "sk-abc"


# --- -c profile=X ------------------------------------------------------------------------


def test_c_profile_selects_the_profile_as_p_does(load: Load, home: Path) -> None:
    (home / "config.toml").write_text(
        'model = "base"\nprofile = "slow"\n'
        '[profiles.fast]\nmodel = "fast-model"\n[profiles.slow]\nmodel = "slow-model"\n'
    )
    (home / "ci.config.toml").write_text('model = "ci-model"\n')
    assert load().settings.model == "slow-model"
    by_c = load(overrides=("profile=fast",))
    assert by_c.settings.model == "fast-model"
    assert by_c.origins["model"].startswith("profile fast")
    assert load(overrides=("profile=ci",)).settings.model == "ci-model"
    # `-p` wins over `-c profile=`, as over the config's `profile`; the environment loses.
    assert load(profile="fast", overrides=("profile=ci",)).settings.model == "fast-model"
    assert (
        load(overrides=("profile=fast",), environ={"OIEXEC_PROFILE": "ci"}).settings.model
        == "fast-model"
    )
    # A profile chosen now beats what a resumed session carried, as `-p` does.
    resumed = load(overrides=("profile=fast",), session={"model": "old"})
    assert resumed.settings.model == "fast-model"


@pytest.mark.parametrize(
    ("override", "said"),
    [
        ("profile=nope", "profile `nope` not found"),
        ("profile=1", "`profile` in -c override: expected a profile name, got 1"),
        ('profile=" "', "expected a profile name"),
    ],
)
def test_c_profile_that_names_no_profile_is_a_config_error(
    load: Load, override: str, said: str
) -> None:
    with pytest.raises(ConfigError, match=said):
        load(overrides=(override,))
