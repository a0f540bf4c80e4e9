"""The scripted model server itself, driven with plain httpx over loopback."""

from __future__ import annotations

import json
import threading
import time
import tomllib
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from httpx_sse import connect_sse

from tests.support.model_server import (
    ModelServer,
    apply_patch_call,
    call,
    drop_after,
    failed,
    fault,
    reply,
    running_model_server,
    stall,
    tool_names,
    tool_outputs,
    usage,
    user_texts,
)


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with running_model_server() as running:
        yield running


@pytest.fixture
def http(server: ModelServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=5) as client:
        yield client


def _sse(http: httpx.Client, path: str, body: dict[str, Any]) -> list[tuple[str, Any]]:
    with connect_sse(http, "POST", path, json=body) as source:
        assert source.response.status_code == 200
        out: list[tuple[str, Any]] = []
        for event in source.iter_sse():
            out.append((event.event, "[DONE]" if event.data == "[DONE]" else event.json()))
        return out


def test_responses_stream_has_the_real_event_shapes(
    server: ModelServer, http: httpx.Client
) -> None:
    server.enqueue(
        reply(
            "All done.",
            reasoning="Thinking it over",
            encrypted_reasoning="ENC",
            tool_calls=[call("exec_command", {"cmd": "ls"}), apply_patch_call("*** Begin Patch")],
            usage=usage(300, 40, cached_input_tokens=100, reasoning_output_tokens=12),
        )
    )

    events = _sse(http, "/v1/responses", {"model": "gpt-5.5", "input": []})

    names = [name for name, _ in events]
    assert all(name == data["type"] for name, data in events)
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    assert names[0] == "response.created"
    assert names[-1] == "response.completed"
    assert "response.output_text.delta" in names
    assert "response.function_call_arguments.delta" in names
    assert "response.custom_tool_call_input.delta" in names
    assert "response.reasoning_summary_text.delta" in names
    assert (
        names.count("response.output_item.added") == names.count("response.output_item.done") == 4
    )
    done = [data["item"] for name, data in events if name == "response.output_item.done"]
    assert [item["type"] for item in done] == [
        "reasoning",
        "message",
        "function_call",
        "custom_tool_call",
    ]
    assert done[0]["summary"] == [{"type": "summary_text", "text": "Thinking it over"}]
    assert done[0]["encrypted_content"] == "ENC"
    assert done[1]["content"][0] == {"type": "output_text", "text": "All done.", "annotations": []}
    assert json.loads(done[2]["arguments"]) == {"cmd": "ls"}
    assert done[2]["call_id"].startswith("call_")
    assert done[3]["input"] == "*** Begin Patch"
    text = "".join(d["delta"] for n, d in events if n == "response.output_text.delta")
    assert text == "All done."
    completed = events[-1][1]["response"]
    assert completed["model"] == "gpt-5.5"
    assert completed["usage"] == {
        "input_tokens": 300,
        "input_tokens_details": {"cached_tokens": 100},
        "output_tokens": 40,
        "output_tokens_details": {"reasoning_tokens": 12},
        "total_tokens": 340,
    }


def test_chat_stream_has_the_real_chunk_shapes(server: ModelServer, http: httpx.Client) -> None:
    server.enqueue(
        reply(
            "Sure.",
            reasoning="hmm",
            tool_calls=[call("exec_command", {"cmd": "ls -la"}, call_id="call_x")],
            usage=usage(50, 7, cached_input_tokens=20, reasoning_output_tokens=3),
        )
    )

    events = _sse(http, "/v1/chat/completions", {"model": "deepseek-chat", "messages": []})

    assert events[-1] == ("message", "[DONE]")
    chunks = [data for _, data in events[:-1]]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert "".join(d.get("reasoning_content", "") for d in deltas) == "hmm"
    assert "".join(d.get("content") or "" for d in deltas) == "Sure."
    fragments = [f for d in deltas for f in d.get("tool_calls", [])]
    assert fragments[0]["id"] == "call_x"
    assert fragments[0]["function"]["name"] == "exec_command"
    assert all(f["index"] == 0 for f in fragments)
    assert len(fragments) > 2  # arguments arrive in pieces
    arguments = "".join(f["function"].get("arguments", "") for f in fragments)
    assert json.loads(arguments) == {"cmd": "ls -la"}
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "tool_calls"
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"] == {
        "prompt_tokens": 50,
        "completion_tokens": 7,
        "total_tokens": 57,
        "prompt_tokens_details": {"cached_tokens": 20},
        "completion_tokens_details": {"reasoning_tokens": 3},
    }


def test_custom_calls_become_input_functions_on_chat(
    server: ModelServer, http: httpx.Client
) -> None:
    server.enqueue(reply(tool_calls=[apply_patch_call("*** Begin Patch\n*** End Patch\n")]))

    events = _sse(http, "/chat/completions", {"messages": []})

    fragments = [
        f
        for _, d in events[:-1]
        if d["choices"]
        for f in d["choices"][0]["delta"].get("tool_calls", [])
    ]
    assert fragments[0]["function"]["name"] == "apply_patch"
    arguments = "".join(f["function"].get("arguments", "") for f in fragments)
    assert json.loads(arguments) == {"input": "*** Begin Patch\n*** End Patch\n"}


def test_requests_are_recorded(server: ModelServer, http: httpx.Client) -> None:
    server.enqueue(reply("a"), reply("b"))

    _sse(http, "/v1/responses?api-version=1", {"model": "m", "input": []})
    http.post("/responses", json={"model": "m2"}, headers={"Authorization": "Bearer k"}).read()
    http.get("/v1/models")

    first, second, models = server.requests
    assert (first.method, first.path, first.query) == (
        "POST",
        "/v1/responses",
        {"api-version": "1"},
    )
    assert first.body == {"model": "m", "input": []}
    assert first.wire == "responses"
    assert second.path == "/responses"
    assert second.headers["authorization"] == "Bearer k"
    assert models.wire is None
    assert [r.body["model"] for r in server.model_requests] == ["m", "m2"]
    assert server.bodies == [first.body, second.body]
    assert server.remaining == 0


def test_empty_script_answers_a_loud_500(server: ModelServer, http: httpx.Client) -> None:
    server.enqueue(reply("only one"))
    _sse(http, "/v1/responses", {"input": []})

    response = http.post("/v1/responses", json={"input": []})

    assert response.status_code == 500
    message = response.json()["error"]["message"]
    assert "no scripted step left for model request #2" in message
    assert "scripted 1" in message
    assert server.model.errors == [message]


def test_faults_carry_status_retry_after_and_body(server: ModelServer, http: httpx.Client) -> None:
    server.enqueue(
        fault(429, retry_after=7, message="slow down"),
        fault(
            503, body={"error": {"message": "custom", "code": "overloaded"}}, headers={"x-a": "1"}
        ),
    )

    first = http.post("/v1/responses", json={})
    second = http.post("/v1/chat/completions", json={})

    assert first.status_code == 429
    assert first.headers["retry-after"] == "7"
    assert first.json()["error"]["message"] == "slow down"
    assert first.json()["error"]["code"] == "rate_limit_exceeded"
    assert second.status_code == 503
    assert second.headers["x-a"] == "1"
    assert second.json() == {"error": {"message": "custom", "code": "overloaded"}}


def test_drop_after_closes_the_connection_mid_stream(
    server: ModelServer, http: httpx.Client
) -> None:
    server.enqueue(drop_after(2, reply("a long answer that never arrives")))
    received: list[str] = []

    with (
        pytest.raises(httpx.RemoteProtocolError),
        connect_sse(http, "POST", "/v1/responses", json={}) as source,
    ):
        for event in source.iter_sse():
            received.append(event.event)

    assert received == ["response.created", "response.output_item.added"]


def test_stall_pauses_then_finishes(server: ModelServer, http: httpx.Client) -> None:
    server.enqueue(stall(0.4, after_events=1))
    started = time.monotonic()

    events = _sse(http, "/v1/responses", {})

    assert time.monotonic() - started >= 0.35
    assert events[-1][0] == "response.completed"


def test_stop_wakes_a_stalled_stream() -> None:
    with running_model_server(stall(30)) as server:
        client = httpx.Client(base_url=server.url, timeout=10)

        def read_stream() -> None:
            try:
                with client.stream("POST", "/v1/responses", json={}) as response:
                    response.read()
            except httpx.HTTPError:
                pass

        reader = threading.Thread(target=read_stream)
        reader.start()
        deadline = time.monotonic() + 5
        while not server.model_requests and time.monotonic() < deadline:
            time.sleep(0.01)
        started = time.monotonic()
    reader.join(timeout=5)
    client.close()
    assert time.monotonic() - started < 3
    assert not reader.is_alive()


def test_failed_step_on_both_wires(server: ModelServer, http: httpx.Client) -> None:
    server.enqueue(failed("boom", code="server_error"), failed("boom"))

    responses = _sse(http, "/v1/responses", {})
    chat = _sse(http, "/v1/chat/completions", {})

    assert responses[-1][0] == "response.failed"
    assert responses[-1][1]["response"]["error"] == {"code": "server_error", "message": "boom"}
    assert chat[-1][1]["error"]["message"] == "boom"


def test_callable_step_sees_the_request_body(server: ModelServer, http: httpx.Client) -> None:
    seen: list[dict[str, Any]] = []

    def answer(body: dict[str, Any]) -> Any:
        seen.append(body)
        outputs = tool_outputs(body)
        return reply(f"tool said {outputs['c1']}")

    server.enqueue(answer)
    body = {
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
            {"type": "function_call_output", "call_id": "c1", "output": "42"},
        ],
        "tools": [
            {"type": "function", "name": "exec_command"},
            {"type": "custom", "name": "apply_patch"},
        ],
    }

    events = _sse(http, "/v1/responses", body)

    assert seen == [body]
    done = [d["item"] for n, d in events if n == "response.output_item.done"]
    assert done[0]["content"][0]["text"] == "tool said 42"


def test_a_raising_callable_step_answers_500(server: ModelServer, http: httpx.Client) -> None:
    def broken(body: dict[str, Any]) -> Any:
        raise KeyError("missing-call-id")

    server.enqueue(broken)

    response = http.post("/v1/responses", json={})

    assert response.status_code == 500
    assert "missing-call-id" in response.json()["error"]["message"]


def test_body_helpers_read_both_wires() -> None:
    chat = {
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": [{"type": "text", "text": "hello"}]},
            {"role": "tool", "tool_call_id": "t1", "content": "out"},
        ],
        "tools": [{"type": "function", "function": {"name": "exec_command"}}],
    }
    responses = {
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "custom_tool_call_output", "call_id": "p1", "output": "Success."},
        ],
        "tools": [{"type": "custom", "name": "apply_patch"}, {"type": "web_search"}],
    }
    assert tool_outputs(chat) == {"t1": "out"}
    assert tool_outputs(responses) == {"p1": "Success."}
    assert user_texts(chat) == ["hello"]
    assert user_texts(responses) == ["hi"]
    assert tool_names(chat) == ["exec_command"]
    assert tool_names(responses) == ["apply_patch", "web_search"]


def test_gets_answer_models_and_404_quickly(server: ModelServer, http: httpx.Client) -> None:
    models = http.get("/v1/models")
    websocket = http.get(
        "/v1/responses",
        headers={"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13"},
    )
    other = http.get("/v1/anything")

    assert models.json() == {"object": "list", "data": []}
    assert websocket.status_code == 404
    assert other.status_code == 404
    assert server.remaining == 0  # GETs never consume steps


def test_non_json_body_is_rejected(server: ModelServer, http: httpx.Client) -> None:
    server.enqueue(reply("kept"))

    response = http.post("/v1/responses", content=b"{not json")

    assert response.status_code == 400
    assert server.remaining == 1


def test_provider_config_and_config_args_point_at_the_server(server: ModelServer) -> None:
    provider = server.provider_config("chat", request_max_retries=0)
    assert provider.base_url == server.base_url
    assert provider.wire_api == "chat"
    assert provider.request_max_retries == 0
    assert provider.env_key is None

    args = server.config_args("mock", "chat", request_max_retries=1, http_headers={"x-a": "b"})

    assert args[::2] == ["-c"] * (len(args) // 2)
    parsed: dict[str, Any] = {}
    for override in args[1::2]:
        key, _, value = override.partition("=")
        parsed[key] = tomllib.loads(f"v = {value}")["v"]
    assert parsed == {
        "model_provider": "mock",
        "model_providers.mock.name": "Scripted",
        "model_providers.mock.base_url": server.base_url,
        "model_providers.mock.wire_api": "chat",
        "model_providers.mock.stream_idle_timeout_ms": 10_000,
        "model_providers.mock.request_max_retries": 1,
        "model_providers.mock.http_headers": {"x-a": "b"},
    }
