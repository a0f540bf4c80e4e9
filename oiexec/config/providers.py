"""Built-in model providers and how a provider's credentials are resolved."""

from __future__ import annotations

import os

from oiexec.config.headers import sendable
from oiexec.config.settings import ProviderConfig, Settings
from oiexec.core.errors import ConfigError


def _chat(name: str, base_url: str, env_key: str | None) -> ProviderConfig:
    """A built-in provider on the Chat Completions wire, as most of them are."""
    return ProviderConfig(name=name, base_url=base_url, env_key=env_key, wire_api="chat")


BUILTIN_PROVIDERS: dict[str, ProviderConfig] = {
    "openai": ProviderConfig(
        name="OpenAI",
        base_url="https://api.openai.com/v1",
        env_key="OPENAI_API_KEY",
        wire_api="responses",
        requires_openai_auth=True,
    ),
    "anthropic": ProviderConfig(
        name="Anthropic",
        base_url="https://api.anthropic.com/v1",
        env_key="ANTHROPIC_API_KEY",
        wire_api="messages",
    ),
    "openrouter": _chat("OpenRouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "deepseek": _chat("DeepSeek", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "moonshot": _chat("Moonshot (Kimi)", "https://api.moonshot.ai/v1", "MOONSHOT_API_KEY"),
    "dashscope": _chat(
        "DashScope (Qwen)",
        "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
        "DASHSCOPE_API_KEY",
    ),
    "zhipu": _chat("Zhipu (GLM)", "https://open.bigmodel.cn/api/paas/v4", "ZHIPUAI_API_KEY"),
    "ollama": _chat("Ollama", "http://localhost:11434/v1", None),
    "lmstudio": _chat("LM Studio", "http://localhost:1234/v1", None),
}

#: `--oss` providers; `--local-provider` picks one, ollama otherwise.
LOCAL_PROVIDERS = ("ollama", "lmstudio")
#: The Codex SDK passes its key here; it works for the built-in OpenAI provider.
CODEX_API_KEY_ENV = "CODEX_API_KEY"


def resolve_provider(settings: Settings) -> tuple[str, ProviderConfig]:
    """The provider a run uses: a custom `[model_providers.<id>]` or a built-in one."""
    provider_id, provider = _lookup_provider(settings)
    if settings.chat_completions:
        provider = provider.model_copy(update={"wire_api": "chat"})
    return provider_id, provider


def _lookup_provider(settings: Settings) -> tuple[str, ProviderConfig]:
    provider_id = settings.model_provider
    if provider_id in BUILTIN_PROVIDERS:
        provider = BUILTIN_PROVIDERS[provider_id]
        if provider_id == "openai" and settings.openai_base_url:
            provider = provider.model_copy(update={"base_url": settings.openai_base_url})
        overrides = settings.model_providers.get(provider_id)
        if overrides is not None:
            # Built-in ids keep their identity; only tuning fields may be layered on top.
            provider = provider.model_copy(
                update=overrides.model_dump(exclude_unset=True, exclude={"name", "env_key"})
            )
        return provider_id, provider
    if provider_id in settings.model_providers:
        provider = settings.model_providers[provider_id]
        if not provider.base_url:
            raise ConfigError(
                f"model provider `{provider_id}` has no base_url",
                hint=f'Set [model_providers.{provider_id}] base_url = "https://.../v1".',
            )
        return provider_id, provider
    known = sorted({*BUILTIN_PROVIDERS, *settings.model_providers})
    raise ConfigError(
        f"Model provider `{provider_id}` not found",
        hint=f"Known providers: {', '.join(known)}. "
        f"Define it under [model_providers.{provider_id}].",
    )


def resolve_api_key(provider_id: str, provider: ProviderConfig) -> str | None:
    """The bearer token for a provider, or None when it needs none.

    Raises ConfigError naming the variable when the provider needs one that is unset.
    """
    _check_env_headers(provider)
    if provider.experimental_bearer_token:
        return provider.experimental_bearer_token
    if provider_id == "openai" and os.environ.get(CODEX_API_KEY_ENV):
        return _sendable_key(CODEX_API_KEY_ENV, os.environ[CODEX_API_KEY_ENV])
    if not provider.env_key:
        return None
    value = os.environ.get(provider.env_key, "").strip()
    if not value:
        hint = provider.env_key_instructions or (
            f"Export {provider.env_key} with your {provider.name or provider_id} API key."
        )
        raise ConfigError(f"Missing environment variable: `{provider.env_key}`.", hint=hint)
    return _sendable_key(provider.env_key, value)


def _sendable_key(variable: str, value: str) -> str:
    """The key, which goes in `Authorization: Bearer`: a character a header cannot carry (a
    pasted non-ASCII quote, a byte that is not UTF-8) is named by position, the key never
    shown."""
    if not sendable(value):
        position = next(i for i, char in enumerate(value) if not sendable(char))
        raise ConfigError(
            f"environment variable `{variable}` holds a character that cannot be sent in an "
            f"HTTP header (at position {position + 1}): an API key is ASCII text on one line",
            hint=f"Export {variable} again with the key as the provider shows it.",
        )
    return value


def _check_env_headers(provider: ProviderConfig) -> None:
    """`env_http_headers`' values, read from the environment as they are sent."""
    for header, variable in provider.env_http_headers.items():
        value = os.environ.get(variable, "").strip()
        if value and not sendable(value):
            raise ConfigError(
                f"environment variable `{variable}` (env_http_headers `{header}`) holds a "
                "character that cannot be sent in an HTTP header: a header value is ASCII "
                "text on one line",
                hint=f"Export {variable} again with a plain ASCII value.",
            )
