"""The OpenTelemetry SDK's providers for one run, and the export when it ends.

Spans and metrics are kept in memory while the run goes (the SDK's in-memory exporter and
reader) and sent once, at the end, each signal in one OTLP/HTTP request from its own daemon
thread, both waited for at most `EXPORT_WAIT_S`. So a collector that is slow, down or
unreachable costs the run a few seconds at most, never its outcome: what went wrong is one
warning on stderr. No background exporter thread runs during the run, and nothing is left to
the SDK's exit hooks (which would wait on the network after the last line was printed).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from oiexec.core.redact import redact
from oiexec.output.otel.options import Collector, OtelOptions

if TYPE_CHECKING:
    from opentelemetry.metrics import Meter
    from opentelemetry.sdk.metrics.export import MetricsData
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.trace import Tracer

__all__ = ["EXPORT_WAIT_S", "Exporters"]

#: How long the end of a run waits for the collector, both signals at once.
EXPORT_WAIT_S = 3.0
_SCOPE = "oiexec"


class Exporters:
    """The run's tracer and meter, and `send`, which exports what they recorded."""

    def __init__(self, options: OtelOptions) -> None:
        self._options = options
        resource = Resource.create(
            {
                "service.name": "oiexec",
                "service.version": options.service_version,
                "deployment.environment.name": options.environment,
            }
        )
        # The SDK logs through `logging`; unhandled, Python's last-resort handler would print
        # its records on stderr. `send` reads them; otherwise they are dropped.
        logging.getLogger("opentelemetry").addHandler(logging.NullHandler())
        self._spans = InMemorySpanExporter()
        # Neither provider registers an exit hook: `send` is the one export, bounded.
        self._tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        self._tracer_provider.add_span_processor(SimpleSpanProcessor(self._spans))
        self._reader = InMemoryMetricReader()
        self._meter_provider = MeterProvider(
            resource=resource, metric_readers=[self._reader], shutdown_on_exit=False
        )
        self.tracer: Tracer = self._tracer_provider.get_tracer(_SCOPE, options.service_version)
        self.meter: Meter = self._meter_provider.get_meter(_SCOPE, options.service_version)

    def send(self, warn: Callable[[str], None], wait_s: float = EXPORT_WAIT_S) -> None:
        """Exports the finished spans and the metrics, waiting at most `wait_s`; one warning
        names what was not exported and why."""
        jobs: list[tuple[str, Collector, Callable[[], bool]]] = []
        traces, metrics = self._options.traces, self._options.metrics
        if traces is not None:
            spans = self._spans.get_finished_spans()
            jobs.append(("spans", traces, lambda: _export_spans(traces, spans, wait_s)))
        if metrics is not None:
            data = self._reader.get_metrics_data()
            if data is not None:
                jobs.append(("metrics", metrics, lambda: _export_metrics(metrics, data, wait_s)))
        with _SdkLog() as log:
            failed = _run_bounded([(name, job) for name, _, job in jobs], wait_s)
        if failed:
            where = sorted({_where(c.url) for name, c, _ in jobs if name in failed})
            reason = log.reason() or f"no answer within {wait_s:g}s"
            what = " and ".join(name for name, _, _ in jobs if name in failed)
            warn(
                f"otel: {what} not exported to {', '.join(where)}"
                + (f": {redact(reason)}" if reason else "")
            )


def _run_bounded(jobs: list[tuple[str, Callable[[], bool]]], wait_s: float) -> set[str]:
    """Runs each job in a daemon thread; the names of those that failed or did not finish
    within `wait_s`."""
    outcomes: dict[str, bool] = {}

    def run(name: str, job: Callable[[], bool]) -> None:
        try:
            outcomes[name] = job()
        except Exception:  # an exporter bug must not end the run either
            logging.getLogger("opentelemetry.oiexec").exception("export failed")
            outcomes[name] = False

    threads = [
        threading.Thread(target=run, args=(name, job), name=f"otel-{name}", daemon=True)
        for name, job in jobs
    ]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + wait_s + 0.5  # the exporter's own timeout ends first
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return {name for name, _ in jobs if not outcomes.get(name, False)}


def _exporter_options(collector: Collector, wait_s: float) -> dict[str, Any]:
    """What both OTLP/HTTP exporters are built with: where, with which headers and TLS
    files, and how long one request may take."""
    return {
        "endpoint": collector.url,
        "headers": collector.headers,
        "timeout": wait_s,
        "certificate_file": collector.ca_certificate,
        "client_certificate_file": collector.client_certificate,
        "client_key_file": collector.client_private_key,
    }


def _export_spans(collector: Collector, spans: tuple[ReadableSpan, ...], wait_s: float) -> bool:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    if not spans:
        return True
    exporter = OTLPSpanExporter(**_exporter_options(collector, wait_s))
    try:
        return exporter.export(spans) == SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()  # type: ignore[no-untyped-call]


def _export_metrics(collector: Collector, data: MetricsData, wait_s: float) -> bool:
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.sdk.metrics.export import MetricExportResult

    exporter = OTLPMetricExporter(**_exporter_options(collector, wait_s))
    try:
        result = exporter.export(data, timeout_millis=wait_s * 1000)
        return result == MetricExportResult.SUCCESS
    finally:
        exporter.shutdown()


def _where(url: str) -> str:
    """The collector as a warning names it: scheme, host and port (no credentials, no path)."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    return f"{parts.scheme}://{host}" + (f":{parts.port}" if parts.port else "")


class _SdkLog(logging.Handler):
    """The SDK's own log records while exporting: kept (the first error is the reason in the
    one warning) instead of printed, since Python's last-resort handler would print each
    retry of an unreachable collector as a line of its own."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self._messages: list[str] = []
        self._logger = logging.getLogger("opentelemetry")
        self._propagate = self._logger.propagate

    def __enter__(self) -> _SdkLog:
        self._logger.addHandler(self)
        self._logger.propagate = False
        return self

    def __exit__(self, *_: object) -> None:
        self._logger.removeHandler(self)
        self._logger.propagate = self._propagate

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._messages.append(record.getMessage().splitlines()[0][:300])
        except Exception:
            self._messages.append(record.msg if isinstance(record.msg, str) else "export error")

    def reason(self) -> str:
        """Why the first failure happened, in few words: the socket error (`Connection
        refused`), else the SDK's first message."""
        for message in self._messages:
            errno = _ERRNO.search(message)
            if errno:
                return errno.group(1).strip()
        # A timeout is said by the caller, with the time waited.
        timeouts = ("timed out", "timeout")
        other = [m for m in self._messages if not any(t in m.lower() for t in timeouts)]
        return other[0] if other else ""


#: `[Errno 111] Connection refused` inside the exporter's message about a failed connection.
_ERRNO = re.compile(r"\[Errno -?\d+\] ([^\"')]+)")
