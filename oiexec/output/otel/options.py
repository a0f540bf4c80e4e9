"""What the runner tells the telemetry package: plain values, resolved from `[otel]` by
runner/telemetry.py, so this package reads no config."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Collector:
    """One OTLP/HTTP endpoint: the full URL of its signal path and what each request carries."""

    url: str
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    ca_certificate: str | None = None
    client_certificate: str | None = None
    client_private_key: str | None = None


@dataclass(frozen=True)
class OtelOptions:
    traces: Collector | None
    metrics: Collector | None
    #: `deployment.environment.name` of everything exported.
    environment: str
    service_version: str
    #: Export the prompt text; export the final answer, tool arguments and command output.
    log_user_prompt: bool = False
    log_outputs: bool = False
    #: Added to every span.
    span_attributes: dict[str, str] = field(default_factory=dict)
    #: Describe the run on its root span and metrics (model, provider, harness, sandbox).
    run_attributes: dict[str, str] = field(default_factory=dict)
