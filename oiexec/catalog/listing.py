"""The model catalog as a list: what `interpreter models list` shows.

Rows come from the models.dev snapshot, one per model a provider serves, tool-calling models
only unless asked (an agent without tools cannot run commands, which is what Open Interpreter
also filters on). Prices are the ones a run would use: genai-prices first, else models.dev,
nothing for a local server.
"""

from __future__ import annotations

from dataclasses import dataclass

from oiexec.catalog.data import (
    CatalogPrice,
    catalog_id,
    from_genai_prices,
    genai_provider,
    md_price,
)
from oiexec.catalog.md_index import md_index
from oiexec.config.providers import BUILTIN_PROVIDERS, LOCAL_PROVIDERS
from oiexec.core.errors import UsageError


@dataclass(frozen=True)
class ListedModel:
    """One row; the documented shape of `models list --json` (see `as_json`)."""

    provider: str
    model: str
    context_window: int | None
    input_per_mtok: float | None
    output_per_mtok: float | None
    cached_input_per_mtok: float | None
    tool_call: bool

    def as_json(self) -> dict[str, object]:
        return {
            "provider": self.provider,
            "model": self.model,
            "context_window": self.context_window,
            "input_per_mtok": self.input_per_mtok,
            "output_per_mtok": self.output_per_mtok,
            "cached_input_per_mtok": self.cached_input_per_mtok,
            "tool_call": self.tool_call,
        }


def known_providers() -> tuple[list[str], list[str]]:
    """oiexec's built-in provider ids the catalog covers, and the catalog's other ids."""
    catalog = md_index()
    ours = sorted(p for p in BUILTIN_PROVIDERS if catalog_id(p) in catalog)
    mapped = {catalog_id(p) for p in ours}
    return ours, sorted(set(catalog) - mapped)


def list_models(provider: str | None = None, *, include_all: bool = False) -> list[ListedModel]:
    """The catalog's models of `provider` (an oiexec id or a catalog id), else of every
    built-in provider; tool-calling ones unless `include_all`. Raises UsageError naming the
    known providers for an unknown one."""
    ours, others = known_providers()
    # The catalog's spelling of one of ours (`moonshotai`) is ours (`moonshot`).
    provider = {catalog_id(p): p for p in ours}.get(provider or "", provider)
    if provider is None:
        chosen = ours
    elif provider in ours or provider in others:
        chosen = [provider]
    else:
        raise UsageError(
            f"unknown provider `{provider}`",
            hint=f"Built-in providers: {', '.join(ours)}.\n"
            f"Other providers in the model catalog: {', '.join(others)}.",
        )
    rows: list[ListedModel] = []
    for name in chosen:
        rows.extend(_rows(name, include_all))
    return rows


def _rows(provider: str, include_all: bool) -> list[ListedModel]:
    catalog_provider = md_index()[catalog_id(provider)]
    base_url = BUILTIN_PROVIDERS[provider].base_url if provider in BUILTIN_PROVIDERS else None
    gp_provider = genai_provider(provider, base_url or catalog_provider.api)
    rows = []
    for model_id, model in catalog_provider.models():
        if not (model.tool_call or include_all):
            continue
        gp_window, price, _ = from_genai_prices(gp_provider, model_id)
        if price is None:
            price, _ = md_price(model)
        if provider in LOCAL_PROVIDERS:
            price = CatalogPrice(input_per_mtok=0, output_per_mtok=0)  # a local server
        rows.append(
            ListedModel(
                provider=provider,
                model=model_id,
                context_window=model.context or gp_window,
                input_per_mtok=None if price is None else price.input_per_mtok,
                output_per_mtok=None if price is None else price.output_per_mtok,
                cached_input_per_mtok=None if price is None else price.cached_input_per_mtok,
                tool_call=bool(model.tool_call),
            )
        )
    return rows
