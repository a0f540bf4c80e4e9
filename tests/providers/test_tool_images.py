"""Images a tool returned reach the model in each wire's own shape, and hosted tools travel
only on the wire that has them (request bodies as built for the provider)."""

from __future__ import annotations

from typing import Any

from oiexec.core.types import ImageInput, Message, ModelRequest, ToolCall, ToolOutput
from oiexec.providers import chat, messages, responses

PNG = ImageInput(path="", data_url="data:image/png;base64,iVBORw0KGgo=")
JPEG = ImageInput(path="", data_url="data:image/jpeg;base64,/9j/4AAQ")
WEB_SEARCH = {"type": "web_search", "external_web_access": False}


def _request(*outputs: ToolOutput) -> ModelRequest:
    calls = [ToolCall(call_id=o.call_id, name="mcp__s__t", arguments="{}") for o in outputs]
    return ModelRequest(
        model="m",
        instructions="be brief",
        history=(Message(role="user", text="look"), *calls, *outputs),
        hosted_tools=(WEB_SEARCH,),
    )


def test_responses_sends_text_and_images_as_output_parts() -> None:
    body = responses.build_body(
        _request(
            ToolOutput(call_id="a", output="two pictures", images=(PNG, JPEG)),
            ToolOutput(call_id="b", output="plain"),
            ToolOutput(call_id="c", output="", images=(PNG,)),
        )
    )
    outputs = {i["call_id"]: i["output"] for i in body["input"] if i["type"].endswith("output")}
    assert outputs["c"] == [{"type": "input_image", "image_url": PNG.data_url}]
    assert outputs["a"] == [
        {"type": "input_text", "text": "two pictures"},
        {"type": "input_image", "image_url": PNG.data_url},
        {"type": "input_image", "image_url": JPEG.data_url},
    ]
    assert outputs["b"] == "plain"
    assert body["tools"] == [WEB_SEARCH]


def test_messages_sends_image_blocks_in_the_tool_result() -> None:
    body = messages.build_body(
        _request(ToolOutput(call_id="a", output="failed, see", images=(JPEG,), is_error=True))
    )
    result = next(
        block
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] == "tool_result"
    )
    assert result["is_error"] is True
    assert result["content"] == [
        {"type": "text", "text": "failed, see"},
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQ"},
        },
    ]
    assert "tools" not in body  # no hosted tools on this wire


def test_chat_puts_images_in_one_user_message_after_the_tool_messages() -> None:
    body = chat.build_body(
        _request(
            ToolOutput(call_id="a", output="first", images=(PNG,)),
            ToolOutput(call_id="b", output="second", images=(JPEG,)),
            ToolOutput(call_id="c", output="third"),
        )
    )
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "tool", "tool", "user"]
    tool_texts = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    assert tool_texts == ["first", "second", "third"]
    parts: list[dict[str, Any]] = body["messages"][-1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url", "text", "image_url"]
    assert "call a" in parts[0]["text"] and "call b" in parts[2]["text"]
    assert parts[1]["image_url"]["url"] == PNG.data_url
    assert parts[3]["image_url"]["url"] == JPEG.data_url
    assert "tools" not in body


def test_chat_images_come_before_the_next_assistant_turn() -> None:
    request = _request(ToolOutput(call_id="a", output="pic", images=(PNG,)))
    history = (*request.history, Message(role="assistant", text="I see a dot"))
    body = chat.build_body(request.model_copy(update={"history": history}))
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "user", "assistant"]
