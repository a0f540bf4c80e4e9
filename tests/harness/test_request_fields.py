"""`[request]` settings of each harness reach the wire: output limits under the name each wire
(and vendor) expects, temperature, thinking, Anthropic effort, Kimi's cache key, DeepSeek's
effort scale, and a `model_reasoning_effort` set by the user winning over the defaults."""

from __future__ import annotations

from typing import Any

import pytest

from oiexec.core.types import Message, ModelRequest, SamplingOptions, ThinkingOptions
from oiexec.providers import chat, messages, responses
from tests.harness.conftest import HarnessFactory

_BUILDERS = {"chat": chat.build_body, "responses": responses.build_body}


def _body(
    make_harness: HarnessFactory,
    harness_id: str,
    wire: str,
    *,
    model: str = "some-model",
    effort: str | None = None,
) -> dict[str, Any]:
    harness = make_harness(harness_id)
    request = ModelRequest(
        model=model,
        instructions=harness.instructions(),
        history=(Message(role="user", text="fix it"),),
        tools=tuple(t.spec for t in harness.tools()),
        reasoning_effort=effort,
        prompt_cache_key="thread-1",
    )
    prepared = harness.prepare_request(request)
    if wire == "messages":
        return messages.build_body(prepared)
    return _BUILDERS[wire](prepared)


@pytest.mark.parametrize(
    ("harness_id", "wire", "expected"),
    [
        ("kimi-code", "chat", {"max_completion_tokens": 32768}),
        ("opencode", "chat", {"max_tokens": 32000, "temperature": 1.0}),
        ("qwen-code", "chat", {"max_tokens": 8000}),
        ("deepseek-tui", "chat", {"max_tokens": 64000}),
        ("claude-code", "chat", {"max_tokens": 32000}),
        ("claude-code", "responses", {"max_output_tokens": 32000}),
        ("claude-code", "messages", {"max_tokens": 32000}),
        ("zcode", "messages", {"max_tokens": 64000, "thinking": {"type": "disabled"}}),
        ("claude-code-bare", "messages", {"output_config": {"effort": "high"}}),
    ],
)
def test_manifest_request_settings_are_on_the_wire(
    make_harness: HarnessFactory, harness_id: str, wire: str, expected: dict[str, Any]
) -> None:
    body = _body(make_harness, harness_id, wire)
    assert {key: body.get(key) for key in expected} == expected


def test_kimi_code_sends_thinking_and_its_session_cache_key(make_harness: HarnessFactory) -> None:
    body = _body(make_harness, "kimi-code", "chat")
    assert body["thinking"] == {"type": "enabled", "keep": "all"}
    assert body["prompt_cache_key"] == "session_thread-1"
    assert "max_tokens" not in body


def test_harnesses_without_settings_send_none(make_harness: HarnessFactory) -> None:
    body = _body(make_harness, "mini-swe-agent", "chat")
    for key in ("max_tokens", "max_completion_tokens", "temperature", "thinking"):
        assert key not in body
    assert "prompt_cache_key" not in body  # the chat wire sends a key only when asked
    assert body["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize(
    ("user", "sent"),
    [("minimal", "low"), ("low", "low"), ("medium", "high"), ("xhigh", "high"), ("ultra", "max")],
)
def test_deepseek_effort_scale(make_harness: HarnessFactory, user: str, sent: str) -> None:
    assert _body(make_harness, "deepseek-tui", "chat", effort=user)["reasoning_effort"] == sent
    # claude-code-bare maps only for DeepSeek models, the family it is the default for.
    bare = _body(make_harness, "claude-code-bare", "chat", model="deepseek-chat", effort=user)
    assert bare["reasoning_effort"] == sent
    other = _body(make_harness, "claude-code-bare", "chat", model="gpt-x", effort=user)
    assert other["reasoning_effort"] == user


def test_user_effort_wins_over_manifest_defaults(make_harness: HarnessFactory) -> None:
    # zcode switches thinking off, but a user who asked for effort gets thinking.
    zcode = _body(make_harness, "zcode", "messages", effort="low")
    assert zcode["thinking"]["type"] == "enabled"
    bare = _body(make_harness, "claude-code-bare", "messages", effort="medium")
    assert bare["output_config"] == {"effort": "medium"}
    assert bare["thinking"] == {"type": "enabled", "budget_tokens": 10_000}
    kimi = _body(make_harness, "kimi-code", "chat", effort="none")
    assert kimi["thinking"] == {"type": "disabled"}
    # No effort set: nothing invented.
    assert "reasoning_effort" not in _body(make_harness, "deepseek-tui", "chat")


def _plain(sampling: SamplingOptions) -> ModelRequest:
    return ModelRequest(
        model="m",
        instructions="",
        history=(Message(role="user", text="hi"),),
        sampling=sampling,
        prompt_cache_key="k",
    )


def test_wires_map_every_sampling_field() -> None:
    sampling = SamplingOptions(
        max_output_tokens=100,
        max_tokens_field="max_completion_tokens",
        temperature=0.5,
        top_p=0.9,
        thinking=ThinkingOptions(enabled=True, budget_tokens=50, keep="all"),
        effort="low",
        include_usage=False,
        chat_prompt_cache_key=True,
        extra_body={"vendor_flag": True},
    )
    c = chat.build_body(_plain(sampling))
    assert c["max_completion_tokens"] == 100 and "max_tokens" not in c
    assert (c["temperature"], c["top_p"], c["vendor_flag"]) == (0.5, 0.9, True)
    assert c["thinking"] == {"type": "enabled", "budget_tokens": 50, "keep": "all"}
    assert "stream_options" not in c and c["prompt_cache_key"] == "k"
    assert "output_config" not in c
    r = responses.build_body(_plain(sampling))
    assert (r["max_output_tokens"], r["temperature"], r["top_p"]) == (100, 0.5, 0.9)
    assert r["vendor_flag"] is True and "thinking" not in r
    m = messages.build_body(_plain(sampling))
    assert m["max_tokens"] == 100 and m["thinking"] == {"type": "enabled", "budget_tokens": 50}
    assert m["output_config"] == {"effort": "low"} and m["vendor_flag"] is True
    # Without a budget, thinking gets all but one token of the output limit.
    default = messages.build_body(
        _plain(SamplingOptions(max_output_tokens=2000, thinking=ThinkingOptions(enabled=True)))
    )
    assert default["thinking"] == {"type": "enabled", "budget_tokens": 1999}
