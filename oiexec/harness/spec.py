"""`HarnessSpec`: a harness manifest (`harnesses/<id>/harness.toml`) validated at load.

Each table maps onto one small piece of code: `[[tools]]` onto tool adapters, `[history]` onto
the request shaping of `ManifestHarness`, `[completion]` onto its completion rule and
`action_format` onto a text-action parser.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from oiexec.harness.instructions import DeveloperPlacement
from oiexec.harness.styles import StyleName
from oiexec.tools.entry import ToolEntry

Wire = Literal["responses", "chat", "messages"]
ActionFormat = Literal["function_calls", "fenced_block", "discussion_command", "markdown_code"]
CompletionMode = Literal["no_tool_calls", "submit_command", "output_marker"]
ReasoningPolicy = Literal["keep", "every_assistant", "tool_call_turns", "none"]

#: A tool entry's `render`: a style name, or "default" (the entry's results in the plain
#: wording, its failures in the harness's `style`, as for every tool).
RENDERS: tuple[str, ...] = ("default", *get_args(StyleName))


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Emulates(_Table):
    product: str
    version: str = ""
    source: str = ""


class PromptSpec(_Table):
    #: System prompt template (string.Template: `$cwd`, `$os`, `$now`, `$tree`, ...).
    system: str = "prompt.md"
    #: Wraps the task (the first user message of a run): `$task` plus the prompt variables.
    task_template: str | None = None
    #: qwen-code: a user message with the environment and a canned assistant reply.
    setup_exchange: str | None = None
    setup_reply: str = ""
    #: Put AGENTS.md and the environment context in the first user messages (Codex style).
    codex_context: bool = False
    #: deepseek-tui: a `<turn_meta>` block prefixed to the latest user message.
    turn_meta: bool = False
    #: Added after every user message of the task (kimi-code's auto-approval note).
    user_reminder: str | None = None
    #: Where the user's developer text goes (harness/instructions.py): a `developer`
    #: message after the base instructions (Codex), or appended to the system prompt.
    developer_text: DeveloperPlacement = "system"


class HistorySpec(_Table):
    reasoning_policy: ReasoningPolicy = "keep"
    #: What a missing reasoning becomes under `every_assistant` / `tool_call_turns`.
    reasoning_placeholder: str = ""
    compact_tool_arguments: bool = False
    #: Characters in tool-call ids replaced by `_` (kimi rewrites `:`).
    tool_call_id_rewrite: str = ""
    drop_unanswered_calls: bool = False
    #: Text-action harnesses send observations as user messages; function harnesses as tools.
    tool_result_role: Literal["tool", "user"] = "tool"
    #: Observation text for text harnesses (`$output`).
    observation_template: str = "$output"
    #: Prune earlier format-error corrections once the model has recovered (SWE-agent).
    prune_format_errors: bool = False


class CompletionSpec(_Table):
    mode: CompletionMode = "no_tool_calls"
    marker: str = ""
    #: A response without an action is a format error (mini-swe-agent, SWE-agent).
    require_action: bool = False
    #: At most one action per response (SWE-agent, mini-swe-agent).
    single_action: bool = False
    #: SWE-agent review_on_submit: the first submit shows a review, the second submits.
    confirm_twice: bool = False
    max_format_retries: int = 3
    format_error: str = ""


class ThinkingSpec(_Table):
    type: Literal["enabled", "disabled"]
    budget_tokens: int | None = None
    keep: str | None = None


class RequestSpec(_Table):
    """`[request]`: sampling settings the harness sends (mapped per wire by the providers).

    `reasoning_effort` is a default used only when the user set no `model_reasoning_effort`;
    `reasoning_effort_map` rewrites either onto the values the model family accepts.
    `prompt_cache_key` is a pattern over `$id`, the run's thread id."""

    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    thinking: ThinkingSpec | None = None
    #: Anthropic `output_config.effort` (Messages wire).
    effort: str | None = None
    reasoning_effort: str | None = None
    reasoning_effort_map: dict[str, str] = Field(default_factory=dict)
    prompt_cache_key: str | None = None
    include_usage: bool | None = None
    extra_body: dict[str, Any] = Field(default_factory=dict)
    #: Settings applied on top when the model id contains the key (case-insensitive).
    models: dict[str, RequestSpec] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_limit(self) -> RequestSpec:
        if self.max_tokens is not None and self.max_completion_tokens is not None:
            raise ValueError("set max_tokens or max_completion_tokens, not both")
        return self

    def for_model(self, model: str) -> RequestSpec:
        """These settings with the `models` entries matching `model` applied in order."""
        fields = self.model_dump(exclude_unset=True, exclude={"models"})
        lowered = model.lower()
        for key, override in self.models.items():
            if key.lower() in lowered:
                fields.update(override.model_dump(exclude_unset=True, exclude={"models"}))
        return RequestSpec.model_validate(fields)


class McpSpec(_Table):
    """`[mcp]`: how the harness offers the run's MCP tools (harness/mcp_tools.py).

    Every harness names them `mcp__<server>__<tool>` (Codex's rule, shared by Claude Code and
    Qwen Code); these keys are where the products differ."""

    #: Descriptions longer than this are cut there and marked `… [truncated]` (Claude Code
    #: 2.1.84 and later, at 2048).
    description_max_chars: int | None = Field(default=None, gt=0)
    #: JSON-Schema keywords removed from the parameters at every depth: the ones the
    #: product strips before its API sees them.
    strip_schema_keys: list[str] = Field(default_factory=list)
    #: Defer the MCP tools behind a `tool_search` tool once the run has this many of them
    #: (Codex 0.169: 100); unset offers them all in every request.
    defer_at: int | None = Field(default=None, ge=0)
    #: How many tools one search returns when the model gives no `limit` (Codex: 8).
    search_limit: int = Field(default=8, gt=0)


class HarnessSpec(_Table):
    id: str
    description: str = ""
    emulates: Emulates
    extends: str = ""
    wire: list[Wire]
    action_format: ActionFormat = "function_calls"
    #: Text harnesses advertise no tools on the wire: their actions are parsed from text.
    advertise_tools: bool = True
    #: Which upstream's words results and errors are rendered in (claude, kimi-cli, ...).
    style: StyleName = "plain"
    #: Environment added to every command the harness runs.
    env: dict[str, str] = Field(default_factory=dict)
    prompt: PromptSpec = Field(default_factory=PromptSpec)
    history: HistorySpec = Field(default_factory=HistorySpec)
    completion: CompletionSpec = Field(default_factory=CompletionSpec)
    tools: list[ToolEntry] = Field(default_factory=list)
    request: RequestSpec = Field(default_factory=RequestSpec)
    mcp: McpSpec = Field(default_factory=McpSpec)
    #: The product's hosted web search (Codex's Responses `web_search` tool), sent when
    #: `web_search` is cached or live and the run is on the Responses wire.
    hosted_web_search: bool = False
    guidance: str | None = None
    fence_language: str = ""
    notes: str = ""

    @model_validator(mode="after")
    def _known_renders(self) -> HarnessSpec:
        for entry in self.tools:
            if entry.render not in RENDERS:
                raise ValueError(
                    f"harness `{self.id}`, tool `{entry.name}`: render `{entry.render}` is not "
                    f"a style; use one of {', '.join(RENDERS)}"
                )
        return self

    def tool(self, name: str) -> ToolEntry:
        for entry in self.tools:
            if entry.name == name:
                return entry
        raise KeyError(name)


def merge_manifests(base: dict[str, Any], child: dict[str, Any]) -> dict[str, Any]:
    """`child` over `base`: tables merge key by key, everything else (lists included) is
    replaced."""
    merged = dict(base)
    for key, value in child.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_manifests(merged[key], value)
        else:
            merged[key] = value
    return merged
