"""Picks the wire client for a provider."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import httpx

from oiexec.config.settings import ProviderConfig
from oiexec.core.errors import ConfigError
from oiexec.core.lazy import load
from oiexec.core.protocols import ModelClient
from oiexec.providers.http import RetryTiming, WaitObserver

__all__ = ["create_client"]

#: Where the client for each `wire_api` lives (`module:class`); they all take the same
#: arguments. A run imports only its provider's wire.
_CLIENT_TYPES: dict[str, str] = {
    "responses": "oiexec.providers.responses:ResponsesClient",
    "chat": "oiexec.providers.chat:ChatClient",
    "messages": "oiexec.providers.messages:MessagesClient",
}


def create_client(
    provider_id: str,
    provider: ProviderConfig,
    api_key: str | None,
    *,
    extra_headers: Mapping[str, str] | None = None,
    timing: RetryTiming | None = None,
    transport: httpx.BaseTransport | None = None,
    wait_observer: WaitObserver | None = None,
) -> ModelClient:
    """The `ModelClient` for `provider`'s `wire_api`; `wait_observer` is told when each
    request starts waiting on the model and when its first event arrives.

    Raises ConfigError when the provider cannot be used (no base URL, unsupported wire).
    """
    if not provider.base_url:
        raise ConfigError(
            f"Model provider `{provider_id}` has no base_url",
            hint=f"Set model_providers.{provider_id}.base_url in config.toml.",
        )
    where = _CLIENT_TYPES.get(provider.wire_api)
    if where is None:
        raise ConfigError(
            f'Model provider `{provider_id}` uses `wire_api = "{provider.wire_api}"`, which is '
            "not supported",
            hint='Use wire_api = "responses", "chat" or "messages".',
        )
    client_type: Callable[..., ModelClient] = load(where)
    return client_type(
        provider,
        api_key,
        provider_id=provider_id,
        extra_headers=extra_headers,
        timing=timing,
        transport=transport,
        wait_observer=wait_observer,
    )
