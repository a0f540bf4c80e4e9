"""Which harness a run gets: explicit `harness = "..."`, else the model family and provider
(first match wins, case-insensitive over provider id, provider name, base URL and model)."""

from __future__ import annotations

from oiexec.config.settings import ProviderConfig
from oiexec.core.errors import ConfigError
from oiexec.harness.data import harness_ids, load_spec

__all__ = ["auto_harness_id", "check_wire", "choose_harness_id"]

_KIMI_URLS = ("api.kimi.com", "api.moonshot.ai", "api.moonshot.cn")


def auto_harness_id(model: str, provider_id: str, provider: ProviderConfig) -> str:
    """The harness for a model family and provider when none is configured."""
    m = model.lower()
    who = f"{provider_id} {provider.name}".lower()
    url = provider.base_url.lower()
    if (
        provider.wire_api == "messages"
        or "claude" in m
        or "anthropic/" in m
        or "anthropic" in who
        or "api.anthropic.com" in url
    ):
        return "claude-code"
    if any(k in m or k in who for k in ("kimi", "moonshot")) or any(u in url for u in _KIMI_URLS):
        return "kimi-code"
    if (
        "qwen" in m
        or m.startswith("qwq")
        or "/qwq" in m
        or "qwen" in who
        or "dashscope" in who
        or ("dashscope" in url and "compatible-mode" in url)
    ):
        return "qwen-code"
    if "deepseek" in f"{m} {who} {url}":
        return "claude-code-bare"
    return "native"


def check_wire(harness_id: str, wire: str) -> None:
    """Refuse a harness the provider's wire cannot carry."""
    spec = load_spec(harness_id)
    if wire not in spec.wire:
        raise ConfigError(
            f'harness `{harness_id}` cannot run on the provider\'s `wire_api = "{wire}"`: it '
            f"supports {', '.join(spec.wire)}",
            hint="Pick another harness with -c harness=..., or a provider with a supported "
            "wire_api.",
        )


def choose_harness_id(
    explicit: str | None, model: str, provider_id: str, provider: ProviderConfig
) -> str:
    """The configured harness (validated), else the auto-selected one; checked against the
    provider's wire either way."""
    if explicit:
        if explicit not in harness_ids():
            raise ConfigError(
                f"unknown harness `{explicit}`",
                hint=f"Available harnesses: {', '.join(harness_ids())}.",
            )
        harness_id = explicit
    else:
        harness_id = auto_harness_id(model, provider_id, provider)
        spec = load_spec(harness_id)
        if provider.wire_api not in spec.wire:
            # Auto-selection never picks what the wire cannot carry: Claude shaping on a
            # messages provider, otherwise fall back to native.
            harness_id = "claude-code" if provider.wire_api == "messages" else "native"
    check_wire(harness_id, provider.wire_api)
    return harness_id
