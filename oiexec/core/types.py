"""Internal values that cross the seams: conversation history, tool specs, model turns.

History is kept in a wire-neutral shape close to the Responses API (the richest wire); each
provider wire translates it. The same items are written to the session rollout, so a resumed
run rebuilds exactly the conversation the model saw.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from oiexec.core.events import Usage


class _Value(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ImageInput(_Value):
    """An image attached to a user message, as a data URL."""

    path: str
    data_url: str


class Message(_Value):
    """A text message. `developer` carries base instructions on wires that have no system role."""

    kind: Literal["message"] = "message"
    role: Literal["system", "developer", "user", "assistant"]
    text: str
    images: tuple[ImageInput, ...] = ()


class Reasoning(_Value):
    """Model reasoning, kept so wires that require echoing it (encrypted or plain) can."""

    kind: Literal["reasoning"] = "reasoning"
    summary: tuple[str, ...] = ()
    # Provider-specific payload that must be sent back unchanged (Responses encrypted_content,
    # Chat `reasoning_content`, Anthropic thinking signature).
    encrypted_content: str | None = None
    content: str | None = None
    item_id: str | None = None


class ToolCall(_Value):
    """A call the model made. `custom` calls (freeform tools) carry raw text in `arguments`."""

    kind: Literal["tool_call"] = "tool_call"
    call_id: str
    name: str
    arguments: str
    call_type: Literal["function", "custom"] = "function"


class ToolOutput(_Value):
    """What a tool returned to the model for `call_id`."""

    kind: Literal["tool_output"] = "tool_output"
    call_id: str
    output: str
    call_type: Literal["function", "custom"] = "function"
    is_error: bool = False
    #: Images the tool returned beside its text (an MCP tool's image blocks); each wire
    #: carries them as its product does, or as a user message after the output.
    images: tuple[ImageInput, ...] = ()


HistoryItem = Annotated[Message | Reasoning | ToolCall | ToolOutput, Field(discriminator="kind")]


class ToolSpec(_Value):
    """A tool as advertised to the model.

    `function` tools carry a JSON Schema in `parameters`; `custom` tools (Codex's freeform
    `apply_patch`) carry a grammar in `format` and receive raw text.
    """

    name: str
    description: str
    type: Literal["function", "custom"] = "function"
    parameters: dict[str, Any] | None = None
    format: dict[str, Any] | None = None


class ThinkingOptions(_Value):
    """Extended thinking switched on or off explicitly (Anthropic `thinking`, Kimi's and
    GLM's chat `thinking`). `budget_tokens` None on the Messages wire means `max_tokens - 1`;
    `keep` is Kimi's `thinking.keep`."""

    enabled: bool
    budget_tokens: int | None = None
    keep: str | None = None


class SamplingOptions(_Value):
    """Request settings a harness sets, in wire-neutral terms; each wire maps what it can
    carry and ignores the rest. `extra_body` is merged into the body last (wire-specific
    keys a harness needs verbatim)."""

    max_output_tokens: int | None = None
    #: The Chat Completions name of the output limit (Kimi wants `max_completion_tokens`).
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    temperature: float | None = None
    top_p: float | None = None
    thinking: ThinkingOptions | None = None
    #: Anthropic `output_config.effort` (Messages wire only).
    effort: str | None = None
    #: Chat `stream_options.include_usage` (None = the wire's default, on).
    include_usage: bool | None = None
    #: A cache key the harness wants sent on the Chat wire too (Kimi's `session_<id>`).
    chat_prompt_cache_key: bool = False
    extra_body: dict[str, Any] = Field(default_factory=dict)


class ModelRequest(_Value):
    """One request to the model: everything a wire needs to build its body."""

    model: str
    instructions: str
    history: tuple[HistoryItem, ...]
    tools: tuple[ToolSpec, ...] = ()
    output_schema: dict[str, Any] | None = None
    reasoning_effort: str | None = None
    reasoning_summary: str | None = None
    prompt_cache_key: str | None = None
    parallel_tool_calls: bool = True
    sampling: SamplingOptions = SamplingOptions()
    #: Provider-hosted tools sent as given on the wire that has them (Codex's `web_search`
    #: on Responses); the other wires cannot carry them and leave them out.
    hosted_tools: tuple[dict[str, Any], ...] = ()


class ModelResponse(_Value):
    """A completed model response: the new history items, in order, and their token usage."""

    items: tuple[HistoryItem, ...]
    usage: Usage = Usage()
    response_id: str | None = None
    finish_reason: str | None = None

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [item for item in self.items if isinstance(item, ToolCall)]

    @property
    def final_text(self) -> str | None:
        texts = [i.text for i in self.items if isinstance(i, Message) and i.role == "assistant"]
        return "\n\n".join(texts) if texts else None
