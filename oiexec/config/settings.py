"""The typed settings tree. Field names are Codex's `config.toml` keys.

Layering (which file sets what) lives in `oiexec.config.loader`; this module only says what
a valid effective config looks like. Validation is strict: a value of the wrong type is an
error, never converted (`network_access = "yes"` must not open the sandbox's network, and
`project_doc_max_bytes = "100"` is a typo to report, not a number). The one conversion left
is pydantic's int-to-float, since TOML writes `check_timeout = 60` for a float field.

`Settings` is a plain pydantic model, not a pydantic-settings `BaseSettings`: the loader merges
every layer itself (deep merge, with the origin of each key), so the model only validates the
merged mapping. pydantic-settings reads the environment layer alone
(`oiexec.config.env_source`), and is imported only when a config variable is set.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from oiexec.config.headers import EnvHeaderMap, HeaderMap, sendable
from oiexec.config.hook_table import HooksConfig
from oiexec.config.mcp import McpServerConfig
from oiexec.config.number_keys import (
    CountKey,
    CountOrZeroKey,
    MillisecondsKey,
    PriceKey,
    SecondsKey,
    SizeKey,
)
from oiexec.config.otel import OtelConfig
from oiexec.config.permissions import PermissionProfile
from oiexec.core.hostrules import parse_pattern
from oiexec.core.policy import SandboxMode

WireApi = Literal["responses", "chat", "messages"]
ApprovalPolicy = Literal["untrusted", "on-failure", "on-request", "never"]
ReasoningEffort = Literal[
    "none", "minimal", "low", "medium", "high", "xhigh", "max", "ultra", "persistent"
]


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


def plain_filename(name: str) -> bool:
    """Whether `name` is a plain file name: not empty, not `.` or `..`, no `/` (so neither
    absolute nor reaching another directory) and no NUL."""
    return bool(name) and name not in (".", "..") and "/" not in name and "\0" not in name


def _http_url(value: str | None) -> str | None:
    """A base URL given explicitly must be one: blank would send requests nowhere useful."""
    if value is None:
        return None
    if not value.strip():
        raise ValueError("must be a URL, e.g. https://llm.example.com/v1, not empty")
    if not value.strip().lower().startswith(("http://", "https://")):
        raise ValueError("must be an http:// or https:// URL, e.g. https://llm.example.com/v1")
    return value.strip()


class ProviderConfig(_Table):
    """`[model_providers.<id>]`: where requests go and how they are authenticated."""

    name: str = ""
    base_url: str = ""
    #: Environment variable holding the API key; unset means no Authorization header.
    env_key: str | None = None
    env_key_instructions: str | None = None
    experimental_bearer_token: str | None = Field(default=None, repr=False)
    wire_api: WireApi = "responses"
    query_params: dict[str, str] = Field(default_factory=dict)
    http_headers: HeaderMap = Field(default_factory=dict)
    #: Header name -> environment variable; sent only when the variable is set.
    env_http_headers: EnvHeaderMap = Field(default_factory=dict)
    request_max_retries: int = Field(default=4, ge=0, le=100)
    stream_max_retries: int = Field(default=5, ge=0, le=100)
    stream_idle_timeout_ms: MillisecondsKey = 300_000
    requires_openai_auth: bool = False

    @field_validator("experimental_bearer_token")
    @classmethod
    def _token_is_sendable(cls, value: str | None) -> str | None:
        # Sent as `Authorization: Bearer <token>`; the token itself is never echoed.
        if value is not None and not sendable(value):
            raise ValueError("must be ASCII text on one line (it is sent in a header)")
        return value

    @field_validator("base_url")
    @classmethod
    def _base_url_is_a_url(cls, value: str) -> str:
        # Runs only when a config sets it; the default "" means "not given" (a custom
        # provider without one is refused when it is selected, oiexec.config.providers).
        return _http_url(value) or ""


class SandboxWorkspaceWrite(_Table):
    """`[sandbox_workspace_write]`: what `workspace-write` adds to the workspace."""

    writable_roots: list[str] = Field(default_factory=list)
    network_access: bool = False
    exclude_tmpdir_env_var: bool = False
    exclude_slash_tmp: bool = False
    #: With `network_access`: the only hosts commands reach, through the runner's proxy
    #: (oiexec.core.hostrules says what an entry may be).
    allowed_domains: list[str] = Field(default_factory=list)

    @field_validator("allowed_domains")
    @classmethod
    def _domains_are_patterns(cls, value: list[str]) -> list[str]:
        for entry in value:
            parse_pattern(entry)  # its ValueError names the entry and what is wrong
        return value


class SandboxLimitsConfig(_Table):
    """`[sandbox_limits]`: per-command resource limits; 0 means unlimited."""

    max_processes: CountOrZeroKey = 1024
    max_file_size_mb: SizeKey = 1024
    max_cpu_seconds: CountOrZeroKey = 3600


class ShellEnvironmentPolicy(_Table):
    """`[shell_environment_policy]`: the environment model-run commands see.

    Unlike Codex, variables that look like secrets (`*KEY*`, `*SECRET*`, `*TOKEN*`,
    `*PASSWORD*`) and the provider's `env_key` are dropped unless `ignore_default_excludes`.
    """

    inherit: Literal["all", "core", "none"] = "all"
    ignore_default_excludes: bool = False
    exclude: list[str] = Field(default_factory=list)
    include_only: list[str] = Field(default_factory=list)
    set: dict[str, str] = Field(default_factory=dict)


class ModelPricing(_Table):
    """`[model_pricing]`: the current model's price in USD per million tokens, for
    `--max-cost` when the model catalog has none (or to correct it)."""

    input_per_mtok: PriceKey
    output_per_mtok: PriceKey
    cached_input_per_mtok: PriceKey | None = None
    cache_write_per_mtok: PriceKey | None = None


class ProjectConfig(_Table):
    trust_level: Literal["trusted", "untrusted"] | None = None


class Settings(BaseModel):
    """The effective configuration of one run."""

    model_config = ConfigDict(extra="forbid", validate_default=True, strict=True)

    model: str = "gpt-5.5"
    model_provider: str = "openai"
    model_providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    openai_base_url: str | None = None
    #: Talk to the chosen provider over Chat Completions (`--chat-completions`).
    chat_completions: bool = False
    review_model: str | None = None
    model_reasoning_effort: ReasoningEffort | None = None
    model_reasoning_summary: Literal["auto", "concise", "detailed", "none"] | None = None
    model_verbosity: Literal["low", "medium", "high"] | None = None
    model_context_window: CountKey | None = None
    model_auto_compact_token_limit: CountKey | None = None
    model_pricing: ModelPricing | None = None

    harness: str | None = None
    harness_guidance: bool = True
    #: Text added after the harness's own prompt, where its product puts developer/system
    #: text (oiexec.harness.instructions); blank means none.
    developer_instructions: str | None = None
    #: A file whose text replaces the harness's base instructions (runner/instructions.py
    #: reads it; a relative path is relative to the directory of the config file setting it).
    model_instructions_file: str | None = None

    #: None means: `workspace-write` in a trusted project, `read-only` otherwise.
    sandbox_mode: SandboxMode | None = None
    sandbox_workspace_write: SandboxWorkspaceWrite = Field(default_factory=SandboxWorkspaceWrite)
    #: "full" refuses a degraded sandbox backend (Landlock without protected paths); "auto"
    #: is "full" for a root runner and "any" otherwise.
    sandbox_require: Literal["auto", "full", "any"] = "auto"
    #: Linux backend: "auto" (bwrap when it works, else Landlock), "bwrap" or "landlock".
    sandbox_backend: Literal["auto", "bwrap", "landlock"] = "auto"
    sandbox_limits: SandboxLimitsConfig = Field(default_factory=SandboxLimitsConfig)
    #: A permission profile (oiexec.config.permissions): a built-in (`:read-only`,
    #: `:workspace`, `:danger-full-access`) or a `[permissions.<name>]` table.
    default_permissions: str | None = None
    permissions: dict[str, PermissionProfile] = Field(default_factory=dict)
    approval_policy: ApprovalPolicy = "on-request"
    shell_environment_policy: ShellEnvironmentPolicy = Field(default_factory=ShellEnvironmentPolicy)

    project_doc_max_bytes: CountOrZeroKey = 32 * 1024
    project_doc_fallback_filenames: list[str] = Field(default_factory=list)
    tool_output_token_limit: CountKey = 10_000

    #: `--check CMD`: a command that must pass before the run counts as done (the verify
    #: loop, oiexec.runner.check). A blank command would pass vacuously, so it is refused.
    check: str | None = None
    #: How many times the check may run (each failure but the last goes back to the model).
    check_max_attempts: CountKey = 3
    #: Seconds one check run may take; a check still running then is killed and fails.
    check_timeout: SecondsKey = 1800.0
    hide_agent_reasoning: bool = False
    #: `--stall-turns N`: end the run (exit 12) once it repeats a failing command N times with
    #: the workspace unchanged, or makes N turns in a row without progress (agent/stall.py).
    #: None (the default): no watchdog.
    stall_turns: CountKey | None = None
    #: `provider/model` entries tried in order when the model's provider is still failing
    #: with a transient error after its retries (runner/fallbacks.py).
    model_fallbacks: list[str] = Field(default_factory=list)

    #: `[mcp_servers.<id>]`: MCP servers started with the run (oiexec.mcp).
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    #: `[hooks]`: commands run at session start, around tool calls and at the stop.
    hooks: HooksConfig = Field(default_factory=HooksConfig)
    #: `[program_paths]`: absolute paths of the programs the runner itself starts outside
    #: the sandbox (`git`, `rg`), instead of the first on PATH outside the writable roots.
    program_paths: dict[str, str] = Field(default_factory=dict)
    #: Credential-looking variables (and the provider key) hooks get; others are removed.
    hooks_env_vars: list[str] = Field(default_factory=list)
    #: `[otel]`: spans and metrics over OTLP/HTTP (oiexec.output.otel); None exports nothing.
    otel: OtelConfig | None = None

    projects: dict[str, ProjectConfig] = Field(default_factory=dict)
    profiles: dict[str, dict[str, Any]] = Field(default_factory=dict)
    profile: str | None = None

    # Accepted for Codex compatibility (the SDK and existing configs pass them).
    web_search: Literal["disabled", "cached", "live"] | None = None
    features: dict[str, bool] = Field(default_factory=dict)
    tools: dict[str, Any] = Field(default_factory=dict)
    notify: list[str] | None = None
    #: Credential-looking variables (and the provider key) `notify` gets; others are removed.
    notify_env_vars: list[str] = Field(default_factory=list)

    @field_validator("model")
    @classmethod
    def _model_names_a_model(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must name a model, e.g. gpt-5.5")
        return value

    @field_validator("openai_base_url")
    @classmethod
    def _openai_base_url_is_a_url(cls, value: str | None) -> str | None:
        return _http_url(value)

    @field_validator("project_doc_fallback_filenames")
    @classmethod
    def _fallbacks_are_plain_names(cls, value: list[str]) -> list[str]:
        bad = [name for name in value if not plain_filename(name)]
        if bad:
            raise ValueError(
                f"{bad[0]!r} is not a plain file name: each entry is a name looked up in the "
                "project's directories (such as `CLAUDE.md`), without `/`, `..` or an "
                "absolute path"
            )
        return value

    @field_validator("model_instructions_file")
    @classmethod
    def _names_a_file(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must be the path of a text file, e.g. ~/prompts/base.md, not blank")
        return value

    @field_validator("model_fallbacks")
    @classmethod
    def _fallbacks_name_models(cls, value: list[str]) -> list[str]:
        if any(not entry.strip() for entry in value):
            raise ValueError('each entry must name a model, e.g. "openrouter/qwen/qwen3-coder"')
        return value

    @field_validator("check")
    @classmethod
    def _check_names_a_command(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must be a shell command such as `pytest -q`, not blank")
        return value
