"""The Chat Completions wire's streamed chunks, read into typed models, and the accumulator
that turns them into a complete `ModelResponse`.

`choices` may be missing or null (the usage chunk of some servers), a delta's `content` may
be a list of parts (Mistral's reasoning models), reasoning comes as `reasoning_content`
(DeepSeek, Kimi, Qwen) or `reasoning` (OpenRouter, where it may also be an object the runner
does not read). A tool call arrives in fragments keyed by `index`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Annotated, Any

from httpx_sse import ServerSentEvent
from pydantic import BeforeValidator

from oiexec.core.events import Usage
from oiexec.core.types import HistoryItem, Message, ModelResponse, Reasoning, ToolCall
from oiexec.providers.custom_tools import unwrap_input
from oiexec.providers.events.base import (
    ErrorBody,
    Text,
    WireModel,
    as_text,
    read,
    stream_failure,
)
from oiexec.providers.http import StreamInterrupted, json_event

__all__ = ["parse_stream"]

_EVENT = "chat.completion.chunk"


class _FunctionDelta(WireModel):
    name: str | None = None
    arguments: str | None = None


class _CallFragment(WireModel):
    index: int | None = None
    id: str | None = None
    function: _FunctionDelta | None = None


def _joined_text(value: Any) -> Any:
    """Content given as a list of parts becomes the text of its `text` parts (other parts,
    such as Mistral's `thinking`, are not the answer); a list that is not parts stays as it
    is, for validation to reject."""
    if not isinstance(value, list) or not all(isinstance(part, dict) for part in value):
        return value
    texts = [part.get("text") for part in value if part.get("type") == "text"]
    return "".join(texts) if all(isinstance(t, str) for t in texts) else value


class _Delta(WireModel):
    content: Annotated[str | None, BeforeValidator(_joined_text)] = None
    reasoning_content: str | None = None
    reasoning: Any = None  # OpenRouter: text, or an object only its own clients read
    tool_calls: list[_CallFragment] | None = None

    def text(self) -> str:
        return self.content or ""

    def thinking(self) -> str:
        if self.reasoning_content:
            return self.reasoning_content
        return self.reasoning if isinstance(self.reasoning, str) else ""


class _Choice(WireModel):
    delta: _Delta | None = None
    finish_reason: str | None = None


class _PromptDetails(WireModel):
    cached_tokens: int | None = None


class _CompletionDetails(WireModel):
    reasoning_tokens: int | None = None


class _Usage(WireModel):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    prompt_tokens_details: _PromptDetails | None = None
    completion_tokens_details: _CompletionDetails | None = None
    #: DeepSeek's name for the cached part of the prompt.
    prompt_cache_hit_tokens: int | None = None

    def usage(self) -> Usage:
        prompt = self.prompt_tokens_details or _PromptDetails()
        completion = self.completion_tokens_details or _CompletionDetails()
        return Usage(
            input_tokens=max(0, self.prompt_tokens or 0),
            cached_input_tokens=max(0, prompt.cached_tokens or self.prompt_cache_hit_tokens or 0),
            output_tokens=max(0, self.completion_tokens or 0),
            reasoning_output_tokens=max(0, completion.reasoning_tokens or 0),
        )


class _Chunk(WireModel):
    id: Text = None
    choices: list[_Choice] | None = None
    usage: _Usage | None = None


@dataclass
class _PendingCall:
    call_id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class _ChatAccumulator:
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, _PendingCall] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    response_id: str | None = None
    finish_reason: str | None = None

    def add_chunk(self, chunk: _Chunk) -> None:
        self.response_id = self.response_id or chunk.id
        if chunk.usage is not None:
            self.usage = chunk.usage.usage()
        for choice in chunk.choices or []:
            delta = choice.delta or _Delta()
            if text := delta.text():
                self.text.append(text)
            if thinking := delta.thinking():
                self.reasoning.append(thinking)
            for fragment in delta.tool_calls or []:
                self._add_call_fragment(fragment)
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason

    def _add_call_fragment(self, fragment: _CallFragment) -> None:
        pending = self.calls.setdefault(fragment.index or 0, _PendingCall())
        if fragment.id:
            pending.call_id = fragment.id
        function = fragment.function or _FunctionDelta()
        if function.name:
            pending.name += function.name
        if function.arguments:
            pending.arguments.append(function.arguments)

    def response(self, custom_tools: frozenset[str]) -> ModelResponse:
        items: list[HistoryItem] = []
        if self.reasoning:
            items.append(Reasoning(content="".join(self.reasoning)))
        text = "".join(self.text)
        if text:
            items.append(Message(role="assistant", text=text))
        for index in sorted(self.calls):
            pending = self.calls[index]
            arguments = "".join(pending.arguments)
            call_id = pending.call_id or f"call_{index}"
            if pending.name in custom_tools:
                items.append(
                    ToolCall(
                        call_id=call_id,
                        name=pending.name,
                        arguments=unwrap_input(arguments),
                        call_type="custom",
                    )
                )
            else:
                items.append(ToolCall(call_id=call_id, name=pending.name, arguments=arguments))
        return ModelResponse(
            items=tuple(items),
            usage=self.usage,
            response_id=self.response_id,
            finish_reason=self.finish_reason,
        )


def parse_stream(
    events: Iterator[ServerSentEvent], *, custom_tools: frozenset[str] = frozenset()
) -> ModelResponse:
    """Accumulate chat chunks into a complete response.

    The response is complete at `data: [DONE]`, or when the stream closes after a chunk
    with a `finish_reason` (some servers omit `[DONE]`). Anything shorter is a dropped stream.
    An `{"error": …}` chunk, even after some output, is judged as every wire judges an error
    inside a stream (`answers.stream_error_verdict`): retried, or final.
    """
    acc = _ChatAccumulator()
    for event in events:
        if event.data.strip() == "[DONE]":
            return acc.response(custom_tools)
        if not event.data:
            continue
        chunk = json_event(event.data)
        if not isinstance(chunk, dict):
            continue
        if chunk.get("error"):
            raise _failure(chunk["error"])
        acc.add_chunk(read(_Chunk, chunk, event=_EVENT))
    if acc.finish_reason is not None:
        return acc.response(custom_tools)
    raise StreamInterrupted("stream closed before [DONE]")


def _failure(raw: Any) -> Exception:
    error = ErrorBody.model_validate(raw)
    message = error.message or as_text(raw) or "an error chunk without a message"
    return stream_failure(error.code or error.type, message, shown=message)
