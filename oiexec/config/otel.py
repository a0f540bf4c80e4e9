"""`[otel]`: where a run's OpenTelemetry spans and metrics go, with Codex's key names.

Codex has three destinations: `exporter` (its log events), `trace_exporter` and
`metrics_exporter`. oiexec exports spans and metrics (no log records), so `exporter` is the
destination of both unless `trace_exporter` / `metrics_exporter` name their own (or `"none"`).
Each is `"none"` or `{ otlp-http = { endpoint, protocol, headers, tls } }`; Codex's
`otlp-grpc` is accepted and exports nothing (a warning says so: the gRPC stack is not shipped).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from oiexec.config.headers import HeaderMap

__all__ = ["OtelConfig", "OtelExporter", "OtlpEndpoint", "OtlpTls"]


class _Table(BaseModel):
    model_config = ConfigDict(
        extra="forbid", strict=True, populate_by_name=True, serialize_by_alias=True
    )


class OtlpTls(_Table):
    """`tls`: a CA to trust and a client certificate for mutual TLS (paths relative to the
    config home, as Codex reads them relative to `~/.codex/`)."""

    ca_certificate: str | None = Field(default=None, alias="ca-certificate")
    client_certificate: str | None = Field(default=None, alias="client-certificate")
    client_private_key: str | None = Field(default=None, alias="client-private-key")


class OtlpEndpoint(_Table):
    """One collector: its URL, the encoding, the headers every export request carries."""

    endpoint: str
    #: Codex's choice of encoding; the Python exporter speaks binary protobuf only, so `json`
    #: is sent as binary (every OTLP/HTTP collector accepts binary) with a note.
    protocol: Literal["binary", "json"] = "binary"
    #: Sent with each export request, never recorded anywhere (values are masked as secrets).
    headers: HeaderMap = Field(default_factory=dict)
    tls: OtlpTls | None = None

    @field_validator("endpoint")
    @classmethod
    def _endpoint_is_a_url(cls, value: str) -> str:
        value = value.strip()
        if not value.lower().startswith(("http://", "https://")):
            raise ValueError(
                "must be an http:// or https:// URL, e.g. https://otel.example.com:4318"
            )
        return value


class OtelExporter(_Table):
    """`{ otlp-http = { ... } }` or Codex's `{ otlp-grpc = { ... } }`; `"none"` (and Codex's
    built-in `"statsig"`) read as neither: nothing is exported there."""

    otlp_http: OtlpEndpoint | None = Field(default=None, alias="otlp-http")
    otlp_grpc: OtlpEndpoint | None = Field(default=None, alias="otlp-grpc")

    @model_validator(mode="before")
    @classmethod
    def _none_is_off(cls, value: object) -> object:
        if value in ("none", "statsig"):
            return {}
        if isinstance(value, str):
            raise ValueError(
                'must be "none" or a table such as '
                '{ otlp-http = { endpoint = "https://otel.example.com:4318" } }'
            )
        if isinstance(value, dict) and not value:
            raise ValueError('set `otlp-http = { endpoint = "..." }`, or "none"')
        return value

    @model_validator(mode="after")
    def _at_most_one(self) -> OtelExporter:
        if self.otlp_http is not None and self.otlp_grpc is not None:
            raise ValueError("set one of `otlp-http` and `otlp-grpc`, not both")
        return self

    @property
    def off(self) -> bool:
        return self.otlp_http is None and self.otlp_grpc is None


class OtelConfig(_Table):
    """`[otel]`."""

    #: `deployment.environment.name` of everything exported (Codex's default).
    environment: str = "dev"
    exporter: OtelExporter | None = None
    #: A signal's own destination (`"none"` turns it off); unset, `exporter`'s.
    trace_exporter: OtelExporter | None = None
    metrics_exporter: OtelExporter | None = None
    #: Export the prompt text (on the turn span); off by default, as in Codex.
    log_user_prompt: bool = False
    #: oiexec's opt-in for what the model produced: the final answer, tool arguments and
    #: command output. Off by default.
    log_outputs: bool = False
    #: Attributes added to every span.
    span_attributes: dict[str, str] = Field(default_factory=dict)

    def destination(self, signal: Literal["traces", "metrics"]) -> OtelExporter | None:
        """The exporter a signal goes to: its own key, else `exporter`; None when off."""
        own = self.trace_exporter if signal == "traces" else self.metrics_exporter
        chosen = self.exporter if own is None else own
        return None if chosen is None or chosen.off else chosen
