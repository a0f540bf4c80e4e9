"""`[otel]` for one run: resolves the config into collectors and opens the run's telemetry
(oiexec/output/otel), or returns None, importing nothing of it, when no destination is set.

Telemetry never stops a run: a destination that cannot be used (gRPC, a header naming an
unset variable, the packages not installed) is a warning and is left out.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit, urlunsplit

from oiexec.config.headers import header_problem
from oiexec.core.redact import register_secret
from oiexec.core.version import __version__

if TYPE_CHECKING:
    from oiexec.config.otel import OtelConfig, OtlpEndpoint
    from oiexec.output.otel.options import Collector
    from oiexec.output.otel.spans import OtelRun
    from oiexec.runner.prepare import Prepared

__all__ = ["collector_for", "open_telemetry", "signal_url"]

Signal = Literal["traces", "metrics"]
_SIGNAL_PATH = re.compile(r"/v1/(?:logs|traces|metrics)/?$")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
INSTALL_HINT = "a dependency of oiexec: reinstall it"


def signal_url(endpoint: str, signal: Signal, *, own: bool) -> str:
    """The URL a signal is posted to. A signal's own exporter (`trace_exporter`) names its
    URL, used as given unless it has no path; the shared `exporter` names the collector, often
    by its logs URL as Codex uses it (`.../v1/logs`), so its `/v1/<signal>` is put in place."""
    parts = urlsplit(endpoint)
    path = parts.path
    if own and path.strip("/"):
        return endpoint
    path = _SIGNAL_PATH.sub("", path).rstrip("/") + f"/v1/{signal}"
    return urlunsplit(parts._replace(path=path))


def open_telemetry(prepared: Prepared, warn: Callable[[str], None]) -> OtelRun | None:
    """The run's telemetry, when `[otel]` names a destination that can be used."""
    config = prepared.config.settings.otel
    if config is None:
        return None
    traces = collector_for(config, "traces", prepared.config.home, warn)
    metrics = collector_for(config, "metrics", prepared.config.home, warn)
    if traces is None and metrics is None:
        return None
    try:
        from oiexec.output.otel.options import OtelOptions
        from oiexec.output.otel.spans import OtelRun
    except ImportError as exc:
        warn(
            f"otel: nothing exported: {exc.name or 'opentelemetry'} is not installed "
            f"({INSTALL_HINT})"
        )
        return None
    settings = prepared.config.settings
    harness = prepared.harness_choice if isinstance(prepared.harness_choice, str) else None
    options = OtelOptions(
        traces=traces,
        metrics=metrics,
        environment=config.environment,
        service_version=__version__,
        log_user_prompt=config.log_user_prompt,
        log_outputs=config.log_outputs,
        span_attributes=dict(config.span_attributes),
        run_attributes={
            "gen_ai.request.model": settings.model,
            "gen_ai.provider.name": prepared.provider_id,
            "oiexec.sandbox": prepared.policy.mode,
            **({"oiexec.harness": harness} if harness else {}),
        },
    )
    try:
        return OtelRun(options, started=prepared.started, prompt=prepared.request.prompt)
    except Exception as exc:  # the SDK refusing to start must not stop the run
        warn(f"otel: nothing exported: {type(exc).__name__}: {exc}")
        return None


def collector_for(
    config: OtelConfig, signal: Signal, home: Path, warn: Callable[[str], None]
) -> Collector | None:
    destination = config.destination(signal)
    if destination is None:
        return None
    from oiexec.output.otel.options import Collector

    key = "trace_exporter" if signal == "traces" else "metrics_exporter"
    own = getattr(config, key) is not None
    name = key if own else "exporter"
    if destination.otlp_http is None:
        warn(
            f"otel: {name} uses otlp-grpc, which oiexec does not speak (use otlp-http): "
            f"{signal} not exported"
        )
        return None
    target: OtlpEndpoint = destination.otlp_http
    if target.protocol == "json":
        warn(f"otel: {name} asks for protocol json; {signal} are sent as binary protobuf")
    headers = _headers(target.headers, name, warn)
    tls = target.tls

    def path(value: str | None) -> str | None:
        return None if value is None else str(home / Path(value).expanduser())

    return Collector(
        url=signal_url(target.endpoint, signal, own=own),
        headers=headers,
        ca_certificate=path(tls.ca_certificate) if tls else None,
        client_certificate=path(tls.client_certificate) if tls else None,
        client_private_key=path(tls.client_private_key) if tls else None,
    )


def _headers(headers: dict[str, str], name: str, warn: Callable[[str], None]) -> dict[str, str]:
    """The headers with `${VAR}` replaced by the variable's value (as in Codex's examples);
    one naming an unset variable is left out. Every value is masked as a secret."""
    resolved: dict[str, str] = {}
    for header, value in headers.items():
        missing = [var for var in _VARIABLE.findall(value) if var not in os.environ]
        if missing:
            warn(f"otel: {name} header `{header}` left out: ${{{missing[0]}}} is not set")
            continue
        text = _VARIABLE.sub(lambda match: os.environ[match.group(1)], value)
        problem = header_problem(header, text)
        if problem:
            warn(f"otel: {name} header left out: {problem}")
            continue
        register_secret(text)
        parts = text.split()
        if len(parts) > 1:  # `Bearer <token>`: the token alone is masked too
            register_secret(parts[-1])
        resolved[header] = text
    return resolved
