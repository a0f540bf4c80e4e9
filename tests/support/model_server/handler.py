"""The HTTP request handler: records each request, takes the next scripted step and plays it
as the response (a stream, an HTTP error, a hang, a drip or raw bytes)."""

from __future__ import annotations

import json
import socket
import time
import traceback
from collections.abc import Mapping
from contextlib import suppress
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from tests.support.model_server.scripted import RecordedRequest
from tests.support.model_server.steps import (
    Drip,
    Drop,
    Failed,
    Fault,
    Hang,
    Interim,
    Keepalive,
    RawBody,
    RawEvents,
    Reply,
    Stall,
    Step,
)
from tests.support.model_server.wires import (
    Wire,
    chat_events,
    encode_event,
    failed_events,
    keepalive_bytes,
    messages_events,
    responses_events,
)

if TYPE_CHECKING:
    from tests.support.model_server.server import _Server


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    # -- routing --------------------------------------------------------------------------------

    def do_GET(self) -> None:
        request = self._record(body=None)
        if self.headers.get("upgrade", "").lower() == "websocket":
            # Codex tries a WebSocket first; refusing at once makes it fall back to HTTPS.
            self.close_connection = True
            self._send_json(404, _error_body("WebSocket is not supported here", "not_found"))
        elif request.path.endswith("/models"):
            self._send_json(200, {"object": "list", "data": []})
        else:
            self._send_json(404, _error_body(f"no such endpoint: GET {request.path}", "not_found"))

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            self._record(body=raw.decode("utf-8", errors="replace"))
            self._send_json(400, _error_body("request body is not JSON", "invalid_json"))
            return
        request = self._record(body=body)
        wire = request.wire
        if wire is None:
            self._send_json(404, _error_body(f"no such endpoint: POST {request.path}", "not_found"))
            return
        model = self.server.owner.model
        if model.delay_s:
            time.sleep(model.delay_s)
        step = model.take(request)
        if isinstance(step, str):
            self._send_json(500, _error_body(step, "scripted_model_exhausted"))
            return
        try:
            while callable(step):
                step = step(body if isinstance(body, dict) else {})
        except Exception:
            message = f"ScriptedModel: a callable step raised:\n{traceback.format_exc()}"
            model.note_error(message)
            self._send_json(500, _error_body(message, "scripted_step_raised"))
            return
        self._play(step, wire, str((body or {}).get("model") or "scripted-model"))

    # -- playing steps --------------------------------------------------------------------------

    def _play(self, step: Step, wire: Wire, model_name: str) -> None:
        ids = self.server.owner.model.next_id
        if isinstance(step, Fault):
            self._send_fault(step)
        elif isinstance(step, Reply):
            self._stream(self._render(step, wire, model_name))
        elif isinstance(step, Drop):
            events = self._render(step.reply, wire, model_name)
            self._stream(events[: step.after_events], complete=False)
        elif isinstance(step, Stall):
            events = self._render(step.reply, wire, model_name)
            self._stream(events, pause_after=step.after_events, pause=step.seconds)
        elif isinstance(step, Failed):
            self._stream(failed_events(step, wire, model=model_name, ids=ids))
        elif isinstance(step, RawEvents):
            self._stream(list(step.events))
        elif isinstance(step, Hang):
            if not self.server.owner.stopping.wait(step.seconds) and step.then is not None:
                with suppress(OSError):
                    self._stream(self._render(step.then, wire, model_name))
            self.close_connection = True
        elif isinstance(step, Drip):
            self._drip(step, wire, model_name)
        elif isinstance(step, RawBody):
            self._send_raw(step)
        elif isinstance(step, Keepalive):
            self._keepalive(step, wire, model_name)
        elif isinstance(step, Interim):
            self._interim(step, wire, model_name)
        else:
            message = f"ScriptedModel: not a scripted step: {step!r}"
            self.server.owner.model.note_error(message)
            self._send_json(500, _error_body(message, "scripted_step_invalid"))

    def _render(self, step: Reply, wire: Wire, model_name: str) -> list[Any]:
        ids = self.server.owner.model.next_id
        if wire == "chat":
            return chat_events(step, model=model_name, ids=ids)
        if wire == "messages":
            return list(messages_events(step, model=model_name, ids=ids))
        return list(responses_events(step, model=model_name, ids=ids))

    def _send_fault(self, step: Fault) -> None:
        message = step.message or f"scripted fault {step.status}"
        if step.body is not None:
            body = dict(step.body)
        elif self._path_wire() == "messages":
            body = _anthropic_error_body(message, step.status)
        else:
            body = _error_body(message, _code(step.status))
        headers = dict(step.headers)
        if step.retry_after is not None:
            headers["Retry-After"] = str(step.retry_after)
        self._send_json(step.status, body, headers)

    def _stream(
        self,
        events: list[Any],
        *,
        complete: bool = True,
        pause_after: int | None = None,
        pause: float = 0.0,
    ) -> None:
        wire = self._path_wire()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        stopping = self.server.owner.stopping
        try:
            for number, event in enumerate(events):
                if number == pause_after and stopping.wait(pause):
                    complete = False
                    break
                self._write_chunk(encode_event(event, wire))
            if pause_after is not None and pause_after >= len(events) and stopping.wait(pause):
                complete = False
            if complete:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                return
        except (BrokenPipeError, ConnectionResetError):
            pass
        # A dropped stream: close without the terminating chunk, as a failing proxy would.
        self.close_connection = True
        with suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _drip(self, step: Drip, wire: Wire, model_name: str) -> None:
        data = b"".join(encode_event(e, wire) for e in self._render(step.reply, wire, model_name))
        self._start_chunked(200, "text/event-stream; charset=utf-8")
        stopping = self.server.owner.stopping
        try:
            for start in range(0, len(data), step.size):
                if start and stopping.wait(step.every):
                    break
                self._write_chunk(data[start : start + step.size])
            else:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                return
        except (BrokenPipeError, ConnectionResetError):
            pass
        self._hang_up()

    def _keepalive(self, step: Keepalive, wire: Wire, model_name: str) -> None:
        events = self._render(step.reply, wire, model_name)
        self._start_chunked(200, "text/event-stream; charset=utf-8")
        stopping = self.server.owner.stopping
        ends = None if step.seconds is None else time.monotonic() + step.seconds
        try:
            for event in events[: step.after_events]:
                self._write_chunk(encode_event(event, wire))
            number = 0
            while ends is None or time.monotonic() < ends:
                if stopping.wait(step.every):
                    raise BrokenPipeError  # the server is stopping: hang up
                number += 1
                self._write_chunk(keepalive_bytes(step.kind, wire, number))
            for event in events[step.after_events :]:
                self._write_chunk(encode_event(event, wire))
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            return
        except (BrokenPipeError, ConnectionResetError):
            pass
        self._hang_up()

    def _interim(self, step: Interim, wire: Wire, model_name: str) -> None:
        stopping = self.server.owner.stopping
        ends = None if step.seconds is None else time.monotonic() + step.seconds
        head = b"HTTP/1.1 200 OK\r\nX-Pad: "
        sent = 0
        try:
            while ends is None or time.monotonic() < ends:
                if step.drip:
                    self.wfile.write(head[sent : sent + 1] or b"a")
                    sent += 1
                else:
                    self.wfile.write(b"HTTP/1.1 102 Processing\r\n\r\n")
                self.wfile.flush()
                if stopping.wait(step.every):
                    raise BrokenPipeError
            if step.then is not None and not step.drip:
                self._stream(self._render(step.then, wire, model_name))
                return
        except (BrokenPipeError, ConnectionResetError):
            pass
        self._hang_up()

    def _send_raw(self, step: RawBody) -> None:
        self._start_chunked(step.status, step.content_type)
        try:
            if step.body:
                self._write_chunk(step.body)
            if step.complete:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                return
        except (BrokenPipeError, ConnectionResetError):
            pass
        self._hang_up()

    def _start_chunked(self, status: int, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _hang_up(self) -> None:
        """Close without the terminating chunk."""
        self.close_connection = True
        with suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _path_wire(self) -> Wire:
        path = self.path.split("?")[0]
        if path.endswith("/chat/completions"):
            return "chat"
        if path.endswith("/messages"):
            return "messages"
        return "responses"

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _send_json(
        self, status: int, body: Mapping[str, Any], headers: Mapping[str, str] | None = None
    ) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _record(self, body: Any) -> RecordedRequest:
        parts = urlsplit(self.path)
        request = RecordedRequest(
            method=self.command,
            path=parts.path,
            query=dict(parse_qsl(parts.query)),
            headers={name.lower(): value for name, value in self.headers.items()},
            body=body,
        )
        self.server.owner.model.record(request)
        return request


def _error_body(message: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": code, "code": code, "param": None}}


def _anthropic_error_body(message: str, status: int) -> dict[str, Any]:
    kind = {
        400: "invalid_request_error",
        401: "authentication_error",
        403: "permission_error",
        404: "not_found_error",
        429: "rate_limit_error",
        529: "overloaded_error",
    }.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def _code(status: int) -> str:
    return {
        400: "invalid_request_error",
        401: "invalid_api_key",
        403: "permission_denied",
        429: "rate_limit_exceeded",
    }.get(status, "server_error")
