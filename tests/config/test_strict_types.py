"""Config values are never converted to the type a key wants: a wrong type is an error naming
where it was set, whichever layer set it. The fuzz tests throw arbitrary values at boolean and
integer keys through every layer and check that what arrives is exactly what was written."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oiexec.config.overrides import parse_value
from oiexec.config.settings import Settings
from oiexec.core.errors import ConfigError, ExitCode
from tests.config.conftest import Load, trust, write_project_config

BOOL_KEYS = [
    "sandbox_workspace_write.network_access",
    "harness_guidance",
    "chat_completions",
    "features.some_feature",
    "model_providers.corp.requires_openai_auth",
    "shell_environment_policy.ignore_default_excludes",
]
INT_KEYS = [
    "project_doc_max_bytes",
    "sandbox_limits.max_processes",
    "model_providers.corp.request_max_retries",
    "tool_output_token_limit",
    "model_context_window",
]

_FUZZ = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)

#: Anything a config file or `-c` could hold.
toml_values = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.sampled_from(["true", "false", "yes", "no", "on", "1", "0", "100", "True", " 5 "]),
    st.lists(st.integers(min_value=0, max_value=3), max_size=2),
)
#: Anything an environment variable or a bare `-c` value could hold.
texts = st.one_of(
    st.text(max_size=8),
    st.sampled_from(["true", "false", "TRUE", "False", "yes", "on", "1", "0", "1.0", "0x10"]),
    st.integers(min_value=-(10**6), max_value=10**6).map(str),
)


def toml(value: Any) -> str:
    """`value` as a TOML literal."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml(v) for v in value) + "]"
    escaped = "".join(
        f"\\u{ord(c):04x}" if ord(c) < 0x20 or ord(c) == 0x7F or c in '"\\' else c for c in value
    )
    return f'"{escaped}"'


def table_text(key: str, literal: str, prefix: str = "") -> str:
    """A TOML document setting the dotted `key` (inside `prefix`) to `literal`."""
    *table, leaf = key.split(".")
    header = ".".join(p for p in [prefix, *table] if p)
    return (f"[{header}]\n" if header else "") + f"{leaf} = {literal}\n"


def value_at(settings_: Settings, key: str) -> Any:
    node: Any = settings_
    for part in key.split("."):
        node = node[part] if isinstance(node, dict) else getattr(node, part)
    return node


def expected_bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def expected_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def check_arrival(load: Load, key: str, wanted: Any, **inputs: Any) -> None:
    """Either the load fails as a config error, or `key` holds exactly `wanted` (None: the
    value must not have been accepted at all)."""
    try:
        loaded = load(**inputs)
    except ConfigError as exc:
        assert exc.exit_code == ExitCode.CONFIG
        return
    arrived = value_at(loaded.settings, key)
    assert wanted is not None, f"{key} accepted a value of the wrong type: {arrived!r}"
    assert type(arrived) is type(wanted) and arrived == wanted


# --- the fuzz tests ---------------------------------------------------------------------------


@_FUZZ
@given(key=st.sampled_from(BOOL_KEYS + INT_KEYS), value=toml_values)
def test_a_user_file_value_arrives_as_written_or_is_refused(
    load: Load, home: Path, key: str, value: Any
) -> None:
    (home / "config.toml").write_text(table_text(key, toml(value)))
    wanted = expected_bool(value) if key in BOOL_KEYS else expected_int(value)
    check_arrival(load, key, wanted)


@_FUZZ
@given(key=st.sampled_from(BOOL_KEYS + INT_KEYS), value=toml_values)
def test_a_profile_value_arrives_as_written_or_is_refused(
    load: Load, home: Path, key: str, value: Any
) -> None:
    (home / "config.toml").write_text(table_text(key, toml(value), prefix="profiles.ci"))
    wanted = expected_bool(value) if key in BOOL_KEYS else expected_int(value)
    check_arrival(load, key, wanted, profile="ci")


@_FUZZ
@given(key=st.sampled_from(BOOL_KEYS + INT_KEYS), value=toml_values)
def test_a_project_file_value_arrives_as_written_or_is_refused(
    load: Load, home: Path, project: Path, key: str, value: Any
) -> None:
    trust(home, project)
    write_project_config(project, table_text(key, toml(value)))
    wanted = expected_bool(value) if key in BOOL_KEYS else expected_int(value)
    check_arrival(load, key, wanted)


@_FUZZ
@given(key=st.sampled_from(BOOL_KEYS + INT_KEYS), raw=st.one_of(texts, toml_values.map(toml)))
def test_a_c_override_arrives_as_its_toml_value_or_is_refused(
    load: Load, key: str, raw: str
) -> None:
    value = parse_value(raw.strip())
    wanted = expected_bool(value) if key in BOOL_KEYS else expected_int(value)
    check_arrival(load, key, wanted, overrides=(f"{key}={raw}",))


@_FUZZ
@given(key=st.sampled_from(BOOL_KEYS + INT_KEYS), text=texts)
def test_an_environment_value_arrives_only_when_it_spells_the_type(
    load: Load, key: str, text: str
) -> None:
    if not text:
        return  # an empty variable counts as unset
    variable = "OIEXEC_" + key.upper().replace(".", "__")
    word = text.strip()
    if key in BOOL_KEYS:
        wanted: Any = word.lower() == "true" if word.lower() in ("true", "false") else None
    else:
        digits = word.lstrip("+-")
        wanted = int(word) if digits.isascii() and digits.isdigit() else None
    check_arrival(load, key, wanted, environ={variable: text})


def test_floats_take_toml_integers(load: Load, home: Path) -> None:
    """TOML writes a whole number without a point; a float key takes it as that number."""
    (home / "config.toml").write_text("check_timeout = 60\n")
    assert load().settings.check_timeout == 60.0
    assert math.isclose(load(overrides=("check_timeout=2.5",)).settings.check_timeout, 2.5)


# --- what the messages say --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            '[sandbox_workspace_write]\nnetwork_access = "yes"\n',
            "`sandbox_workspace_write.network_access` in {config}:2: expected a boolean "
            '(true or false), got the string "yes"',
        ),
        (
            '\nproject_doc_max_bytes = "100"\n',
            '`project_doc_max_bytes` in {config}:2: expected an integer, got the string "100" '
            "(write it without quotes)",
        ),
        (
            'sandbox_mode = "sometimes"\n',
            "`sandbox_mode` in {config}:1: expected one of 'read-only', 'workspace-write' "
            "or 'danger-full-access', got the string \"sometimes\"",
        ),
        (
            '[sandbox_workspace_write]\nwritable_roots = ["/a", 3]\n',
            "`sandbox_workspace_write.writable_roots[1]` in {config}:2: expected a string, "
            "got the integer 3",
        ),
    ],
)
def test_a_wrong_type_in_a_file_names_file_line_key_type_and_value(
    load: Load, home: Path, text: str, problem: str
) -> None:
    config = home / "config.toml"
    config.write_text(text)
    with pytest.raises(ConfigError) as info:
        load()
    assert problem.format(config=config) in info.value.message


def test_a_profile_value_is_named_at_its_line_in_the_user_config(load: Load, home: Path) -> None:
    config = home / "config.toml"
    config.write_text('model = "x"\n\n[profiles.ci]\nharness_guidance = 0\n')
    with pytest.raises(ConfigError) as info:
        load(profile="ci")
    assert (
        f"`harness_guidance` in {config}:4: expected a boolean (true or false), got the integer 0"
        in info.value.message
    )


def test_every_wrong_value_is_listed_at_once(load: Load, home: Path) -> None:
    (home / "config.toml").write_text('harness_guidance = "no"\ntool_output_token_limit = "9"\n')
    with pytest.raises(ConfigError) as info:
        load(environ={"OIEXEC_CHAT_COMPLETIONS": "yes"}, overrides=("model=123",))
    message = info.value.message
    assert "`harness_guidance` in" in message
    assert "`tool_output_token_limit` in" in message
    assert (
        "`chat_completions` in environment variable OIEXEC_CHAT_COMPLETIONS: expected a boolean"
        in message
    )
    assert "`model` in -c override: expected a string, got the integer 123" in message
    hint = info.value.hint or ""
    assert "-c 'key=\"text\"'" in hint
    assert "a boolean is true or false" in hint


def test_a_json_table_in_the_environment_keeps_json_types(load: Load) -> None:
    """In a table given whole as JSON, `"true"` is a string, not a boolean."""
    environ = {"OIEXEC_SANDBOX_WORKSPACE_WRITE": '{"network_access": "true"}'}
    with pytest.raises(ConfigError, match="expected a boolean"):
        load(environ=environ)
    environ = {"OIEXEC_SANDBOX_WORKSPACE_WRITE": '{"network_access": true}'}
    assert load(environ=environ).settings.sandbox_workspace_write.network_access is True


# --- empty values -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("override", "problem"),
    [
        ("model=", "`model` in -c override: must name a model"),
        ('model="  "', "`model` in -c override: must name a model"),
        ('model_providers.corp.base_url=""', "`model_providers.corp.base_url` in -c override: "),
        ('openai_base_url=""', "`openai_base_url` in -c override: must be a URL"),
        ("model_providers.corp.base_url=llm.corp", "must be an http:// or https:// URL"),
    ],
)
def test_empty_model_and_base_urls_are_config_errors(
    load: Load, override: str, problem: str
) -> None:
    with pytest.raises(ConfigError, match="invalid configuration") as info:
        load(overrides=(override,))
    assert problem in info.value.message


def test_a_custom_provider_without_a_base_url_is_refused_when_selected(load: Load) -> None:
    from oiexec.config.providers import resolve_provider

    loaded = load(overrides=("model_provider=corp", 'model_providers.corp.name="Corp"'))
    with pytest.raises(ConfigError, match="model provider `corp` has no base_url"):
        resolve_provider(loaded.settings)
