"""The base of the wire clients that need nothing beyond one `ProviderHttp`."""

from __future__ import annotations

from collections.abc import Mapping

import httpx

from oiexec.config.settings import ProviderConfig
from oiexec.providers.http import ProviderHttp, RetryTiming, WaitObserver

__all__ = ["WireClient"]


class WireClient:
    """What every wire client shares: one `ProviderHttp` and closing it. Subclasses add
    `respond`, which is where the wires differ."""

    #: How errors name the provider when the caller gives no id.
    default_provider_id = "provider"

    def __init__(
        self,
        provider: ProviderConfig,
        api_key: str | None,
        *,
        provider_id: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
        timing: RetryTiming | None = None,
        transport: httpx.BaseTransport | None = None,
        wait_observer: WaitObserver | None = None,
    ) -> None:
        self._http = ProviderHttp(
            provider_id or self.default_provider_id,
            provider,
            api_key,
            extra_headers=extra_headers,
            timing=timing,
            transport=transport,
            wait_observer=wait_observer,
        )

    def close(self) -> None:
        self._http.close()
