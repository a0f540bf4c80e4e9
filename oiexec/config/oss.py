"""What `--oss` means: a local provider, its default open model, and a server that answers.

As in Codex, `--oss` without `-m` runs the local provider's default open model (`gpt-oss:20b`
on Ollama, `openai/gpt-oss-20b` on LM Studio). Codex's `--oss` also beats a `-c model=...`;
here an explicit `-c model=...` is kept, since it was typed on the same command line.

A local server that is not running would otherwise cost the whole retry schedule before the
run fails; one quick connection attempt says so in well under a second, naming the URL.
"""

from __future__ import annotations

import httpx

from oiexec.config.settings import ProviderConfig
from oiexec.core.errors import ProviderError

__all__ = ["DEFAULT_OSS_MODELS", "check_local_server"]

#: The model `--oss` runs when `-m` is not given, per local provider (Codex's defaults).
DEFAULT_OSS_MODELS = {"ollama": "gpt-oss:20b", "lmstudio": "openai/gpt-oss-20b"}

#: How to start each local server, for the message when it does not answer.
_START = {
    "ollama": "Start it with `ollama serve` (install: https://ollama.com/download)",
    "lmstudio": "Start it with `lms server start` (install: https://lmstudio.ai/download)",
}

#: Connecting to a local server takes milliseconds; refused or unroutable shows at once.
_CONNECT_TIMEOUT_S = 0.5


def check_local_server(provider_id: str, provider: ProviderConfig) -> None:
    """Raises `ProviderError` naming the URL when the built-in local provider's server does not
    accept a connection. Any HTTP answer, even an error or a slow one, counts as running: the
    request itself will say what is wrong. Other providers are not probed."""
    if provider_id not in DEFAULT_OSS_MODELS:
        return
    url = provider.base_url.rstrip("/") + "/models"
    timeout = httpx.Timeout(1.0, connect=_CONNECT_TIMEOUT_S)
    try:
        with httpx.Client(timeout=timeout, trust_env=False) as client:
            client.get(url)
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        name = provider.name or provider_id
        raise ProviderError(
            f"no {name} server answers at {provider.base_url} ({type(exc).__name__}: {exc})",
            hint=f"Is {name} running? {_START[provider_id]}; or point "
            f'-c model_providers.{provider_id}.base_url="http://HOST:PORT/v1" at it.',
        ) from None
    except httpx.HTTPError:
        # Connected, then slow or odd: the server is there; the run reports what follows.
        return
