"""Keys that do nothing in exec say so: once per run, on stderr and in the run log, never as an
`error` item (so a Codex SDK user's items and ids are Codex's), and as exit 3 with
`--strict-config`. Which keys Codex knows comes from its schema, through a generator whose
output is committed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oiexec.config import codex_schema
from oiexec.config.codex_schema import codex_knows, derive_key_paths, parse_path
from oiexec.core.errors import ExitCode
from tests.config.conftest import Load
from tests.conftest import CliResult, exec_args, run_cli
from tests.support.model_server import ModelServer, reply

NOTE = "accepted for compatibility, has no effect in exec"
#: What the Codex SDK passes on every run (its own test suite does).
SDK_FLAGS = [
    "-c",
    "model_providers.scripted.supports_websockets=false",
    "-c",
    "features.plugins=false",
]


def run_log(home: Path) -> list[dict[str, object]]:
    lines = [
        json.loads(line)
        for path in sorted((home / "logs").glob("*"))
        for line in path.read_text().splitlines()
        if line.strip()
    ]
    return lines


def notes(result: CliResult) -> list[str]:
    return [line for line in result.stderr.splitlines() if NOTE in line]


# --- the key list derived from Codex's schema -----------------------------------------------


def test_the_committed_key_list_is_what_the_generator_derives_from_the_schema() -> None:
    assert codex_schema.main(["--check"]) == 0
    keys = codex_schema.KEYS_FILE.read_text().splitlines()
    for expected in ("features.plugins", "model_providers.*.supports_websockets", "desktop.**"):
        assert expected in keys


def test_the_generator_follows_references_maps_unions_and_open_tables() -> None:
    schema = {
        "additionalProperties": False,
        "definitions": {
            "Loop": {
                "additionalProperties": False,
                "properties": {"again": {"$ref": "#/definitions/Loop"}},
            },
            "Provider": {"additionalProperties": False, "properties": {"url": {}}},
            "Either": {"anyOf": [{}, {"additionalProperties": False, "properties": {"on": {}}}]},
        },
        "properties": {
            "providers": {
                "additionalProperties": {"$ref": "#/definitions/Provider"},
                "type": "object",
            },
            "opaque": {"type": "object"},
            "loop": {"allOf": [{"$ref": "#/definitions/Loop"}]},
            "flag": {"$ref": "#/definitions/Either"},
            "notice": {"additionalProperties": False, "properties": {"hide_5.1": {}}},
        },
    }
    assert derive_key_paths(schema) == [
        "flag",
        "flag.on",
        "loop",
        "loop.again",
        "notice",
        'notice."hide_5.1"',
        "opaque",
        "opaque.**",
        "providers",
        "providers.*",
        "providers.*.url",
    ]
    assert parse_path('notice."hide_5.1"') == ["notice", "hide_5.1"]


def test_codex_knows_its_keys_and_not_typos() -> None:
    assert codex_knows(["model_providers", "corp", "supports_websockets"])
    assert codex_knows(["tui", "keymap", "global", "copy"])
    assert codex_knows(["desktop", "anything", "below"])
    assert not codex_knows(["modle"])
    assert not codex_knows(["model_providers", "corp", "base_ulr"])


def test_the_loader_sets_codex_keys_aside_without_a_warning(load: Load, home: Path) -> None:
    (home / "config.toml").write_text('[tui]\ntheme = "dark"\n')
    loaded = load(overrides=("features.plugins=false", "modle=x"))
    assert [(k.key_path, k.where) for k in loaded.ignored] == [
        (("tui", "theme"), f"{home / 'config.toml'}:2")
    ]
    assert loaded.warnings == ["ignoring unknown config key `modle` (-c override)"]


def test_a_feature_nobody_has_is_warned_about_as_unknown(load: Load) -> None:
    loaded = load(overrides=("features.skils=false",))
    assert loaded.warnings == ["ignoring unknown feature `features.skils` (-c override)"]


# --- through a run ----------------------------------------------------------------------------


def test_the_sdk_flags_give_no_error_item_and_a_note_on_stderr_and_in_the_run_log(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    model_server.enqueue(reply("done"))
    result = run_cli([*exec_args(model_server), *SDK_FLAGS, "x"], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert result.items("error") == []
    # The answer is the first item, as in Codex's stream.
    assert result.items("agent_message")[0]["id"] == "item_0"
    assert notes(result) == [
        f"warning: model_providers.scripted.supports_websockets: {NOTE} (-c override)",
        f"warning: features.plugins: {NOTE} (-c override)",
    ]
    logged = [e["message"] for e in run_log(oi_home) if e.get("event") == "config.no_effect"]
    assert logged == [line.removeprefix("warning: ") for line in notes(result)]


def test_an_unknown_key_still_gets_its_error_item(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(reply("done"))
    result = run_cli([*exec_args(model_server), "-c", "modle=x", "x"], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert [i["message"] for i in result.items("error")] == [
        "ignoring unknown config key `modle` (-c override)"
    ]


def test_strict_config_refuses_keys_with_no_effect_naming_each(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    (oi_home / "config.toml").write_text('approval_policy = "on-request"\n')
    args = [*exec_args(model_server), "--strict-config", *SDK_FLAGS, "-c", 'model_verbosity="low"']
    result = run_cli([*args, "x"], cwd=repo)
    assert result.returncode == ExitCode.CONFIG
    for key, where in [
        ("model_providers.scripted.supports_websockets", "-c override"),
        ("features.plugins", "-c override"),
        ("approval_policy", f"{oi_home / 'config.toml'}:1"),
        ("model_verbosity", "-c override"),
    ]:
        assert f"`{key}` in {where}" in result.stderr
    assert "drop --strict-config" in result.stderr
    assert model_server.model_requests == []


def test_approval_policy_never_is_no_surprise_but_another_policy_is_noted(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    model_server.enqueue(reply("a"), reply("b"))
    (oi_home / "config.toml").write_text('approval_policy = "never"\n')
    quiet = run_cli([*exec_args(model_server), "x"], cwd=repo)
    assert notes(quiet) == []
    (oi_home / "config.toml").write_text('approval_policy = "untrusted"\n')
    noted = run_cli([*exec_args(model_server), "x"], cwd=repo)
    assert noted.returncode == 0, noted.stderr
    assert notes(noted) == [f"warning: approval_policy: {NOTE} ({oi_home / 'config.toml'}:1)"]


@pytest.mark.parametrize(
    ("wire", "noted"),
    [("responses", False), ("chat", True)],
)
def test_web_search_is_noted_where_the_harness_and_wire_cannot_carry_it(
    model_server: ModelServer, repo: Path, wire: str, noted: bool
) -> None:
    model_server.enqueue(reply("done"))
    args = [*exec_args(model_server, wire=wire), "-c", "harness=native", "-c", 'web_search="live"']
    result = run_cli([*args, "x"], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert bool(notes(result)) is noted
    if noted:
        assert notes(result) == [f"warning: web_search: {NOTE} (-c override)"]


def test_a_failed_start_still_prints_the_notes_before_the_error(
    model_server: ModelServer, repo: Path
) -> None:
    result = run_cli([*exec_args(model_server), *SDK_FLAGS, "-c", "harness=nope", "x"], cwd=repo)
    assert result.returncode == ExitCode.CONFIG
    assert len(notes(result)) == 2


def test_enable_and_disable_name_features_like_any_other_key(
    model_server: ModelServer, repo: Path
) -> None:
    model_server.enqueue(reply("done"))
    args = [*exec_args(model_server), "--enable", "plugins", "--disable", "skils", "x"]
    result = run_cli(args, cwd=repo)
    assert result.returncode == 0, result.stderr
    assert notes(result) == [f"warning: features.plugins: {NOTE} (-c override)"]
    assert [i["message"] for i in result.items("error")] == [
        "ignoring unknown feature `features.skils` (-c override)"
    ]


def test_config_show_reports_the_same_keys_and_refuses_them_when_strict(
    repo: Path, oi_home: Path
) -> None:
    (oi_home / "config.toml").write_text('model_verbosity = "low"\n[tui]\ntheme = "dark"\n')
    shown = run_cli(["config", "show"], cwd=repo)
    assert shown.returncode == 0, shown.stderr
    assert notes(shown) == [
        f"warning: tui.theme: {NOTE} ({oi_home / 'config.toml'}:3)",
        f"warning: model_verbosity: {NOTE} ({oi_home / 'config.toml'}:1)",
    ]
    strict = run_cli(["config", "show", "--strict-config"], cwd=repo)
    assert strict.returncode == ExitCode.CONFIG
    assert f"`tui.theme` in {oi_home / 'config.toml'}:3" in strict.stderr
