"""What the run needs to know about its model: its context window and its price.

Config wins over the catalog (`model_context_window`, `[model_pricing]`).
"""

from __future__ import annotations

from dataclasses import dataclass

from oiexec.config.settings import Settings
from oiexec.core.events import ModelPrice


@dataclass(frozen=True)
class ModelFacts:
    context_window: int | None
    price: ModelPrice | None


def model_facts(settings: Settings, provider_id: str) -> ModelFacts:
    """The window and price of `settings.model` at `provider_id`; None where nothing says."""
    price = None
    if settings.model_pricing is not None:
        price = ModelPrice(**settings.model_pricing.model_dump())
    return ModelFacts(context_window=settings.model_context_window, price=price)
