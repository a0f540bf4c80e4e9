"""`model_fallbacks`: a `ModelClient` that, when its model's provider is still failing with a
transient error after the retries (`ProviderUnavailable`), sends the same request to the next
model of the list, and stays on it for the rest of the run.

Errors no other model would fix (a bad key, a bad request, a spent quota, a request too long
for the window) are raised as they are. Each client of the list is opened only when the run
moves to it; `on_switch` is told of each move (the runner announces and records it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from oiexec.core.errors import ProviderUnavailable
from oiexec.core.protocols import ModelClient, RetryCallback
from oiexec.core.types import ModelRequest, ModelResponse

__all__ = ["FallbackClient", "FallbackModel"]


@dataclass(frozen=True)
class FallbackModel:
    """One entry of the list: how it is named (`provider/model`), the model id the request
    carries, and how its provider's client is opened."""

    label: str
    model: str
    open: Callable[[], ModelClient]


class FallbackClient:
    def __init__(
        self,
        first: ModelClient,
        label: str,
        fallbacks: Sequence[FallbackModel],
        on_switch: Callable[[str, FallbackModel, str], None],
    ) -> None:
        self._client = first
        self._label = label
        #: None while on the run's own model: its requests go out as the loop made them.
        self._model: str | None = None
        self._left = list(fallbacks)
        self._on_switch = on_switch
        self._opened: list[ModelClient] = [first]

    def respond(self, request: ModelRequest, on_retry: RetryCallback) -> ModelResponse:
        while True:
            sent = (
                request
                if self._model is None
                else request.model_copy(update={"model": self._model})
            )
            try:
                return self._client.respond(sent, on_retry)
            except ProviderUnavailable as exc:
                if not self._left:
                    raise
                target = self._left.pop(0)
                client = target.open()
                self._opened.append(client)
                self._on_switch(self._label, target, exc.message)
                self._client, self._label, self._model = client, target.label, target.model

    def close(self) -> None:
        for client in self._opened:
            client.close()
