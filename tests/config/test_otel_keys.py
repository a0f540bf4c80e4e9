"""`[otel]` with Codex's key names: a Codex-shaped section loads without a warning (strict
too), and a wrong value is a config error naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from oiexec.core.errors import ConfigError
from tests.config.conftest import Load

CODEX_SHAPED = """
[otel]
environment = "staging"
log_user_prompt = false
trace_exporter = "none"
span_attributes = { team = "platform" }

[otel.exporter.otlp-http]
endpoint = "https://otel.example.com/v1/logs"
protocol = "binary"
headers = { "x-otlp-api-key" = "${OTLP_TOKEN}" }
tls = { ca-certificate = "certs/ca.pem" }

[otel.metrics_exporter.otlp-grpc]
endpoint = "https://otel.example.com:4317"
"""


def test_a_codex_shaped_section_loads_without_a_warning_even_when_strict(
    load: Load, home: Path
) -> None:
    (home / "config.toml").write_text(CODEX_SHAPED)

    loaded = load(strict=True)

    assert loaded.warnings == [] and loaded.ignored == []
    otel = loaded.settings.otel
    assert otel is not None
    traces, metrics = otel.destination("traces"), otel.destination("metrics")
    assert traces is None  # "none" turns the shared exporter off for spans
    assert metrics is not None and metrics.otlp_grpc is not None
    shared = otel.exporter
    assert shared is not None and shared.otlp_http is not None
    assert shared.otlp_http.tls is not None
    assert shared.otlp_http.tls.ca_certificate == "certs/ca.pem"
    assert otel.span_attributes == {"team": "platform"}


@pytest.mark.parametrize(
    ("override", "key", "words"),
    [
        ('otel.exporter={otlp-http={endpoint="ftp://x"}}', "otel.exporter.otlp-http.endpoint",
         "http:// or https:// URL"),
        ('otel.exporter="otlp-http"', "otel.exporter", 'must be "none" or a table'),
        ("otel.exporter={}", "otel.exporter", "set `otlp-http"),
        ('otel.exporter={otlp-http={endpoint="http://a"},otlp-grpc={endpoint="http://b"}}',
         "otel.exporter", "not both"),
        ('otel.trace_exporter={otlp-http={endpoint="http://a",protocol="xml"}}',
         "otel.trace_exporter.otlp-http.protocol", "binary"),
        ('otel.exporter={otlp-http={endpoint="http://a",headers={"bad name"="x"}}}',
         "otel.exporter.otlp-http.headers", "not an HTTP header name"),
        ('otel.log_user_prompt="yes"', "otel.log_user_prompt", "boolean"),
    ],
)  # fmt: skip
def test_a_wrong_value_is_a_config_error_naming_the_key(
    load: Load, override: str, key: str, words: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        load(overrides=(override,))
    assert f"`{key}`" in raised.value.message
    assert words in raised.value.message
