"""A scripted OpenAI-compatible model server on 127.0.0.1 for tests.

It speaks the Responses wire (`POST …/responses`), Chat Completions
(`POST …/chat/completions`) and Anthropic Messages (`POST …/messages`), all streamed as SSE
shaped like the real APIs, and answers each model request with the next scripted step:

    with running_model_server() as server:
        server.enqueue(
            reply(tool_calls=[call("exec_command", {"cmd": "echo hi"})]),
            fault(status=429, retry_after=0),          # retried by the client
            reply("done", usage=usage(input_tokens=50, output_tokens=3)),
        )
        provider = server.provider_config()            # or server.config_args() for the CLI
        ...
        assert tool_outputs(server.bodies[-1])         # what the model was sent

Steps: `reply`, `fault`, `drop_after`, `stall`, `failed`, `raw_events`, or a callable taking
the parsed request body and returning one of those. An empty queue answers HTTP 500 with a
message naming the problem, so a test fails loudly instead of hanging.

Fault injection below the level of events: `hang` (no response headers for a while), `drip`
(a reply in small slices with pauses, split mid-event), `raw_body` (any bytes with any
content type and status: garbled SSE, truncated JSON, an HTML page answering 200),
`keepalive` (SSE comments, blank lines or the wire's keepalive events instead of an answer,
forever or for a while) and `interim` (`102 Processing` before the headers).

The package, one job a module: `steps` (what to answer with), `scripted` (the script and the
request log), `wires` (a reply as each wire's SSE events), `handler` (playing a step over
HTTP), `server` (the server, its provider settings and the `model_server` fixture), `bodies`
(reading what the client sent). Import from the package, not its modules.
"""

from tests.support.model_server.bodies import tool_names, tool_outputs, user_texts
from tests.support.model_server.scripted import RecordedRequest, ScriptedModel
from tests.support.model_server.server import (
    ModelServer,
    model_server,
    remember_catalog_answer,
    running_model_server,
)
from tests.support.model_server.steps import (
    CustomCall,
    Drip,
    Drop,
    Failed,
    Fault,
    FunctionCall,
    Hang,
    Interim,
    Keepalive,
    RawBody,
    RawEvents,
    Reply,
    Stall,
    Step,
    TokenUsage,
    apply_patch_call,
    call,
    custom_call,
    drip,
    drop_after,
    failed,
    fault,
    hang,
    interim,
    keepalive,
    raw_body,
    raw_events,
    reply,
    stall,
    usage,
)
from tests.support.model_server.wires import (
    Wire,
    chat_events,
    messages_events,
    responses_events,
)

__all__ = [
    "CustomCall",
    "Drip",
    "Drop",
    "Failed",
    "Fault",
    "FunctionCall",
    "Hang",
    "Interim",
    "Keepalive",
    "ModelServer",
    "RawBody",
    "RawEvents",
    "RecordedRequest",
    "Reply",
    "ScriptedModel",
    "Stall",
    "Step",
    "TokenUsage",
    "Wire",
    "apply_patch_call",
    "call",
    "chat_events",
    "custom_call",
    "drip",
    "drop_after",
    "failed",
    "fault",
    "hang",
    "interim",
    "keepalive",
    "messages_events",
    "model_server",
    "raw_body",
    "raw_events",
    "remember_catalog_answer",
    "reply",
    "responses_events",
    "running_model_server",
    "stall",
    "tool_names",
    "tool_outputs",
    "usage",
    "user_texts",
]
