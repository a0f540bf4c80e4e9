"""A run's OpenTelemetry export (`[otel]` in config): spans for the run, its turn, each model
request, tool call and command, and metrics for tokens, cost, duration and exit class, sent
over OTLP/HTTP when the run ends (output/otel/export.py).

Fed by what the run already produces: its events (`OtelSink`, an EventSink), the model client
and the tool gate it is handed (wrapped, output/otel/spans.py), and its result. The runner
imports this package only when `[otel]` names a destination (runner/telemetry.py), so a run
without it loads none of the OpenTelemetry SDK.
"""
