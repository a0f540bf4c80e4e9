"""A local OTLP/HTTP collector for tests: takes `/v1/traces` and `/v1/metrics` export requests
on 127.0.0.1, decodes them with opentelemetry-proto (the collector's own message types) and
keeps them with the headers they came with. `hang=True` accepts and never answers (a stuck
collector)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


def value_of(any_value: AnyValue) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value_of(v) for v in any_value.array_value.values]
    return None if kind is None else getattr(any_value, kind)


@dataclass
class Span:
    name: str
    span_id: bytes
    parent_span_id: bytes
    trace_id: bytes
    attributes: dict[str, Any]
    status_code: int
    status_message: str
    events: list[str]


@dataclass
class Export:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class OtlpReceiver:
    hang: bool = False
    exports: list[Export] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _release: threading.Event = field(default_factory=threading.Event)

    def start(self) -> OtlpReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = self.rfile.read(length)
                with receiver._lock:
                    receiver.exports.append(
                        Export(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                if receiver.hang:
                    receiver._release.wait(30)
                    return
                reply = (
                    ExportTraceServiceResponse()
                    if self.path.endswith("/traces")
                    else ExportMetricsServiceResponse()
                ).SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()

    def of(self, suffix: str) -> list[Export]:
        with self._lock:
            return [e for e in self.exports if e.path.endswith(suffix)]

    def spans(self) -> list[Span]:
        found: list[Span] = []
        for export in self.of("/v1/traces"):
            request = ExportTraceServiceRequest.FromString(export.body)
            for resource_spans in request.resource_spans:
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        found.append(
                            Span(
                                name=span.name,
                                span_id=span.span_id,
                                parent_span_id=span.parent_span_id,
                                trace_id=span.trace_id,
                                attributes={a.key: value_of(a.value) for a in span.attributes},
                                status_code=span.status.code,
                                status_message=span.status.message,
                                events=[event.name for event in span.events],
                            )
                        )
        return found

    def resource(self) -> dict[str, Any]:
        export = self.of("/v1/traces")[0]
        request = ExportTraceServiceRequest.FromString(export.body)
        attributes = request.resource_spans[0].resource.attributes
        return {a.key: value_of(a.value) for a in attributes}

    def metrics(self) -> dict[str, list[tuple[dict[str, Any], float]]]:
        """Metric name -> (attributes, value) of each data point (sums and histogram sums)."""
        found: dict[str, list[tuple[dict[str, Any], float]]] = {}
        for export in self.of("/v1/metrics"):
            request = ExportMetricsServiceRequest.FromString(export.body)
            for resource_metrics in request.resource_metrics:
                for scope_metrics in resource_metrics.scope_metrics:
                    for metric in scope_metrics.metrics:
                        points: list[tuple[dict[str, Any], float]] = found.setdefault(
                            metric.name, []
                        )
                        kind = metric.WhichOneof("data")
                        for point in getattr(metric, kind).data_points:
                            attrs = {a.key: value_of(a.value) for a in point.attributes}
                            if kind == "histogram":
                                value = float(point.sum)
                            else:
                                value = float(point.as_double or point.as_int)
                            points.append((attrs, value))
        return found
