"""What the run needs to know about its model: its context window and its price.

Config wins (`model_context_window`, `[model_pricing]`); else the model catalog answers
(`catalog_data`: the models.dev snapshot and genai-prices, both shipped offline in their
wheels); else None. The catalogs are loaded only when config leaves a fact open and the run
needs it, in a process of their own (`catalog/probe.py`), and their answer is remembered on
disk (`catalog/cache.py`).
"""

from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass

from oiexec.catalog.cache import remember, remembered
from oiexec.catalog.data import CatalogEntry
from oiexec.catalog.probe import Probe
from oiexec.config.environment import default_home
from oiexec.config.providers import BUILTIN_PROVIDERS, LOCAL_PROVIDERS
from oiexec.config.settings import Settings
from oiexec.core.events import ModelPrice

#: What a local server (Ollama, LM Studio) charges.
FREE = ModelPrice(input_per_mtok=0, output_per_mtok=0)


@dataclass(frozen=True)
class ModelFacts:
    context_window: int | None
    price: ModelPrice | None
    #: What a user spending by this price should know: that it is unknown, borrowed from
    #: another provider's entry, or lower than the provider's rate for long prompts. Shown as
    #: warnings where the price is used (`--max-cost`).
    price_notes: tuple[str, ...] = ()


def model_facts(settings: Settings, provider_id: str) -> ModelFacts:
    """The window and price of `settings.model` at `provider_id`; None where nothing says."""
    return PendingFacts(settings, provider_id, use_probe=False).result()


@dataclass
class PendingFacts:
    """`model_facts` for a run, looked up only if the run needs them, and then ahead of time:
    `begin()` starts the catalog's part (a memo miss is looked up in a process of its own,
    `catalog/probe.py`, so the runner never loads the catalogs) and `result()` waits for it.
    A short run that never needs a window or a price looks nothing up."""

    settings: Settings
    provider_id: str
    #: Whether a memo miss is looked up in the probe (else here, when `result()` is asked).
    use_probe: bool = True
    _entry_found: CatalogEntry | None = None
    _probe: Probe | None = None
    _begun: bool = False
    _result: ModelFacts | None = None

    def begin(self) -> None:
        """Starts the look-up if config leaves a fact open and the memo has no answer."""
        if self._begun:
            return
        self._begun = True
        settings = self.settings
        if not self._needs_catalog():
            return
        base_url = _base_url(settings, self.provider_id)
        found = remembered(default_home(), self.provider_id, base_url, settings.model)
        self._entry_found = found
        if found is None and self.use_probe:
            self._probe = Probe.start(self.provider_id, base_url, settings.model)

    def result(self) -> ModelFacts:
        if self._result is None:
            self.begin()
            self._result = _facts(self.settings, self.provider_id, self._entry())
        return self._result

    def price_within(self, wait_s: float) -> tuple[ModelPrice | None, str | None]:
        """The price for the run's cost report, and why it is unknown when it is. A price in
        config (or a local server's) needs no catalog; a look-up still under way is waited
        for at most `wait_s` seconds, since a report must not hold up the end of a run.
        Never raises: a broken catalog costs the report its price, never the run."""
        settings = self.settings
        model, provider = settings.model, self.provider_id
        if settings.model_pricing is not None or provider in LOCAL_PROVIDERS:
            return _facts(settings, provider, CatalogEntry()).price, None
        self.begin()
        probe = self._probe
        waiting = self._result is None and self._entry_found is None and probe is not None
        if waiting and probe is not None and not probe.wait(wait_s):
            return None, f"the model catalog did not answer in time for `{model}`"
        try:
            price = self.result().price
        except Exception as exc:
            return None, f"the model catalog could not be read ({type(exc).__name__})"
        if price is None:
            return None, f"no price is known for model `{model}` at provider `{provider}`"
        return price, None

    def settle(self, error: type[BaseException] | None, *_: object) -> None:
        """At the end of a run (an exit callback): a look-up that has finished is taken, and
        remembered for the next run; one still going is ended, never waited for."""
        probe = self._probe
        if probe is None or self._result is not None:
            return
        if error is None and probe.finished():
            with contextlib.suppress(Exception):  # nothing needed it: only the memo is at stake
                self.result()
                return
        probe.cancel()

    def cancel(self) -> None:
        """Ends a look-up still under way (a run that stops before it needs the answer)."""
        if self._probe is not None:
            self._probe.cancel()

    def _needs_catalog(self) -> bool:
        settings = self.settings
        return settings.model_context_window is None or settings.model_pricing is None

    def _entry(self) -> CatalogEntry:
        settings = self.settings
        if not self._needs_catalog():
            return CatalogEntry()
        if self._entry_found is not None:
            return self._entry_found
        args = (default_home(), self.provider_id, _base_url(settings, self.provider_id))
        entry = None if self._probe is None else self._probe.entry()
        if entry is None:
            # No probe, or it had no answer: looked up here, as it always could be.
            from oiexec.catalog.data import lookup

            entry = lookup(args[1], args[2], settings.model)
        remember(*args, settings.model, entry)
        self._entry_found = entry
        return entry


def _facts(settings: Settings, provider_id: str, entry: CatalogEntry) -> ModelFacts:
    window = settings.model_context_window
    price = None
    if settings.model_pricing is not None:
        price = ModelPrice(**settings.model_pricing.model_dump())
    model = settings.model
    if window is None:
        window = entry.context_window
    notes: list[str] = []
    if price is None and provider_id in LOCAL_PROVIDERS:
        price = FREE
    elif price is None and entry.price is None:
        notes.append(
            f"no price is known for model `{model}` at provider `{provider_id}` (it is not in "
            "the model catalog); give one with -c model_pricing.input_per_mtok=N "
            "-c model_pricing.output_per_mtok=N"
        )
    elif price is None and entry.price is not None:
        price = ModelPrice(**asdict(entry.price))
        rates = f"${price.input_per_mtok:g} in, ${price.output_per_mtok:g} out per Mtok"
        if entry.borrowed_from is not None:
            notes.append(
                f"provider `{provider_id}` is not in the model catalog: `{model}` is priced as "
                f"at `{entry.borrowed_from}` ({rates}); set [model_pricing] if it charges "
                "otherwise"
            )
        if entry.price_tier_from is not None:
            notes.append(
                f"`{model}` costs more for prompts over {entry.price_tier_from:,} tokens; "
                f"--max-cost counts every token at the base rate ({rates})"
            )
    return ModelFacts(window, price, tuple(notes))


def _base_url(settings: Settings, provider_id: str) -> str | None:
    """Where the provider is served from: it names a custom provider the catalog knows under
    another id (`[model_providers.gw] base_url = "https://api.groq.com/openai/v1"`)."""
    provider = settings.model_providers.get(provider_id)
    if provider is not None and provider.base_url:
        return provider.base_url
    builtin = BUILTIN_PROVIDERS.get(provider_id)
    return builtin.base_url if builtin is not None else None
