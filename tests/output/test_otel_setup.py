"""How `[otel]` becomes the collectors a run exports to (runner/telemetry.py), in-process:
each signal's URL, the destinations that cannot be used (a warning, never a failed run), and
headers taken from the environment, masked as secrets."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from oiexec.config.otel import OtelConfig
from oiexec.core.redact import redact
from oiexec.runner.telemetry import collector_for, signal_url


@pytest.mark.parametrize(
    ("endpoint", "own", "traces"),
    [
        # The shared exporter names the collector, as Codex users do by its logs URL.
        ("https://otel.example.com/v1/logs", False, "https://otel.example.com/v1/traces"),
        ("https://otel.example.com:4318", False, "https://otel.example.com:4318/v1/traces"),
        ("https://otel.example.com/otlp/", False, "https://otel.example.com/otlp/v1/traces"),
        ("https://otel.example.com/v1/metrics", False, "https://otel.example.com/v1/traces"),
        # A signal's own exporter names its URL, used as given once it has a path.
        ("https://opik.example.com/api/otel/v1/traces", True,
         "https://opik.example.com/api/otel/v1/traces"),
        ("https://ingest.example.com/custom", True, "https://ingest.example.com/custom"),
        ("http://127.0.0.1:4318/", True, "http://127.0.0.1:4318/v1/traces"),
    ],
)  # fmt: skip
def test_each_signal_is_posted_to_its_own_path(endpoint: str, own: bool, traces: str) -> None:
    assert signal_url(endpoint, "traces", own=own) == traces
    if not own:
        metrics = traces.replace("/v1/traces", "/v1/metrics")
        assert signal_url(endpoint, "metrics", own=own) == metrics


def _config(**otel: object) -> OtelConfig:
    return OtelConfig.model_validate(otel)


def test_the_signals_own_exporter_wins_and_none_turns_one_off(tmp_path: Path) -> None:
    config = _config(
        exporter={"otlp-http": {"endpoint": "https://shared.example.com/v1/logs"}},
        metrics_exporter="none",
        trace_exporter={"otlp-http": {"endpoint": "https://traces.example.com/v1/traces"}},
    )
    warnings: list[str] = []
    traces = collector_for(config, "traces", tmp_path, warnings.append)
    assert traces is not None and traces.url == "https://traces.example.com/v1/traces"
    assert collector_for(config, "metrics", tmp_path, warnings.append) is None
    assert warnings == []


def test_grpc_and_json_are_said_not_failed(tmp_path: Path) -> None:
    config = _config(
        trace_exporter={"otlp-grpc": {"endpoint": "https://otel.example.com:4317"}},
        metrics_exporter={"otlp-http": {"endpoint": "https://m.example.com", "protocol": "json"}},
    )
    warnings: list[str] = []
    assert collector_for(config, "traces", tmp_path, warnings.append) is None
    assert collector_for(config, "metrics", tmp_path, warnings.append) is not None
    assert warnings == [
        "otel: trace_exporter uses otlp-grpc, which oiexec does not speak (use otlp-http): "
        "traces not exported",
        "otel: metrics_exporter asks for protocol json; metrics are sent as binary protobuf",
    ]


def test_headers_take_variables_from_the_environment_and_are_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTLP_TOKEN", "tok-8d1f0c2b9e")
    monkeypatch.setenv("BROKEN", "a\nb")
    config = _config(
        exporter={
            "otlp-http": {
                "endpoint": "https://otel.example.com",
                "headers": {
                    "authorization": "Bearer ${OTLP_TOKEN}",
                    "x-team": "platform",
                    "x-missing": "${NOT_SET_ANYWHERE}",
                    "x-broken": "${BROKEN}",
                },
                "tls": {"ca-certificate": "certs/ca.pem", "client-certificate": "/etc/c.pem"},
            }
        }
    )
    warnings: list[str] = []
    collector = collector_for(config, "traces", tmp_path, warnings.append)

    assert collector is not None
    assert collector.headers == {"authorization": "Bearer tok-8d1f0c2b9e", "x-team": "platform"}
    assert warnings[0] == (
        "otel: exporter header `x-missing` left out: ${NOT_SET_ANYWHERE} is not set"
    )
    assert "x-broken" in warnings[1] and "a\nb" not in warnings[1]
    # Relative TLS paths are under the config home, as Codex's are under ~/.codex/.
    assert collector.ca_certificate == str(tmp_path / "certs/ca.pem")
    assert collector.client_certificate == "/etc/c.pem"
    # The token is a secret from now on: whatever the run writes masks it.
    assert redact("sent tok-8d1f0c2b9e") == "sent [REDACTED]"
    assert redact("Bearer tok-8d1f0c2b9e") == "[REDACTED]"


_HOSTS = st.from_regex(r"[a-z][a-z0-9-]{0,20}(\.[a-z][a-z0-9-]{0,20}){0,3}", fullmatch=True)
_PATHS = st.lists(st.from_regex(r"[A-Za-z0-9._~-]{1,12}", fullmatch=True), max_size=4)


@given(
    scheme=st.sampled_from(["http", "https"]),
    host=_HOSTS,
    port=st.none() | st.integers(1, 65535),
    parts=_PATHS,
    signal_path=st.sampled_from(["", "/v1/logs", "/v1/traces", "/v1/metrics", "/"]),
)
def test_the_shared_endpoint_keeps_its_collector_and_gets_one_signal_path(
    scheme: str, host: str, port: int | None, parts: list[str], signal_path: str
) -> None:
    base = f"{scheme}://{host}" + (f":{port}" if port else "") + "".join(f"/{p}" for p in parts)
    # A path already ending in a signal's is read as that signal's URL (the case above).
    assume(not base.endswith(("/v1/logs", "/v1/traces", "/v1/metrics")))
    for signal in ("traces", "metrics"):
        url = signal_url(base + signal_path, signal, own=False)
        assert url == f"{base}/v1/{signal}"
