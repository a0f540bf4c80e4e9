"""`model_fallbacks = ["provider/model", ...]`: the models a run moves on to when its own
model's provider is still failing with a transient error after its retries
(providers/fallback.py does the moving).

An entry whose part before the first `/` names a provider (built in, or defined under
`[model_providers]`) is that provider's model; any other entry is a model of the run's own
provider (`qwen/qwen3-coder` on OpenRouter). Every entry is checked before the thread starts,
as the run's own provider is: the provider must exist, its API key variable must be set, and
the run's harness must be able to talk over its wire. Their keys are kept from the commands
the model runs, as the run's own key is.

A move is shown as Codex shows a reroute, an `error` item `model rerouted: a -> b (why)`,
and recorded in the session (a `model_rerouted` event), so `exec resume` continues on the
model the session was last using.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from oiexec.config.loader import LoadedConfig
from oiexec.config.providers import BUILTIN_PROVIDERS, resolve_api_key, resolve_provider
from oiexec.config.settings import ProviderConfig
from oiexec.core.errors import ConfigError
from oiexec.core.redact import register_secret

if TYPE_CHECKING:
    from oiexec.core.context import ItemEmitter
    from oiexec.core.protocols import ModelClient, SessionStore
    from oiexec.output.runlog import RunLogSink
    from oiexec.providers.fallback import FallbackModel
    from oiexec.providers.http import WaitObserver

__all__ = ["MODEL_REROUTED", "Fallback", "open_client", "resolve_fallbacks"]

#: The rollout's `event_msg` type of a move to a fallback model.
MODEL_REROUTED = "model_rerouted"


@dataclass(frozen=True)
class Fallback:
    provider_id: str
    provider: ProviderConfig
    model: str
    api_key: str | None

    @property
    def label(self) -> str:
        return f"{self.provider_id}/{self.model}"


def resolve_fallbacks(
    config: LoadedConfig, provider_id: str, harness_id: str | None
) -> tuple[Fallback, ...]:
    """The run's fallbacks, each checked (raises `ConfigError` naming the entry). The run's own
    model, and an entry given twice, are left out: a resumed run that had moved to a fallback
    continues on it, and the list goes on from there. Keeps the fallbacks' key variables from
    the commands the model runs (`shell_environment_policy.exclude`)."""
    settings = config.settings
    seen = {(provider_id, settings.model)}
    fallbacks: list[Fallback] = []
    for entry in settings.model_fallbacks:
        fallback = _resolve(config, entry, provider_id, harness_id)
        if (fallback.provider_id, fallback.model) in seen:
            continue
        seen.add((fallback.provider_id, fallback.model))
        fallbacks.append(fallback)
    keys = [f.provider.env_key for f in fallbacks if f.provider.env_key]
    if keys:
        policy = settings.shell_environment_policy
        hidden = policy.model_copy(update={"exclude": [*policy.exclude, *keys]})
        config.settings = settings.model_copy(update={"shell_environment_policy": hidden})
    return tuple(fallbacks)


def _resolve(
    config: LoadedConfig, entry: str, provider_id: str, harness_id: str | None
) -> Fallback:
    settings = config.settings
    prefix, slash, rest = entry.partition("/")
    known = prefix in BUILTIN_PROVIDERS or prefix in settings.model_providers
    target, model = (prefix, rest) if slash and rest and known else (provider_id, entry)
    origin = config.origins.get("model_fallbacks", "config")
    where = f"model_fallbacks entry `{entry}` (from {origin})"
    try:
        _, provider = resolve_provider(settings.model_copy(update={"model_provider": target}))
        api_key = resolve_api_key(target, provider)
        if harness_id is not None:
            from oiexec.harness.select import check_wire

            check_wire(harness_id, provider.wire_api)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc.message}", hint=exc.hint) from exc
    register_secret(api_key)
    return Fallback(target, provider, model, api_key)


def open_client(
    provider_id: str,
    provider: ProviderConfig,
    api_key: str | None,
    *,
    model: str,
    fallbacks: tuple[Fallback, ...],
    extra_headers: Mapping[str, str],
    wait_observer: WaitObserver | None,
    items: ItemEmitter,
    store: SessionStore,
    runlog: RunLogSink | None,
) -> ModelClient:
    """The run's model client: its provider's, and when the run has fallbacks, one that
    moves down the list (announcing each move with `items`, recording it in `store`)."""
    from oiexec.providers.registry import create_client

    first = create_client(
        provider_id, provider, api_key, extra_headers=extra_headers, wait_observer=wait_observer
    )
    if not fallbacks:
        return first
    from oiexec.core.events import ErrorItem
    from oiexec.providers.fallback import FallbackClient, FallbackModel

    def opener(fallback: Fallback) -> Callable[[], ModelClient]:
        return lambda: create_client(
            fallback.provider_id,
            fallback.provider,
            fallback.api_key,
            extra_headers=extra_headers,
            wait_observer=wait_observer,
        )

    by_label = {f.label: f for f in fallbacks}

    def switched(before: str, target: FallbackModel, reason: str) -> None:
        fallback = by_label[target.label]
        # Codex's words for a model change it did not ask for, as a warning item.
        items.completed(
            ErrorItem(
                id=items.next_id(),
                message=f"model rerouted: {before} -> {target.label} ({reason})",
            )
        )
        store.append(
            "event_msg",
            {
                "type": MODEL_REROUTED,
                "previous": before,
                "model": fallback.model,
                "model_provider": fallback.provider_id,
                "reason": reason,
            },
        )
        if runlog is not None:
            runlog.note("model.rerouted", before=before, after=target.label, reason=reason)

    models = [FallbackModel(f.label, f.model, opener(f)) for f in fallbacks]
    label = f"{provider_id}/{model}"
    return FallbackClient(first, label, models, switched)
