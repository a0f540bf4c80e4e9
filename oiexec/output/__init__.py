"""Where a run's results go: the human transcript and JSONL event processors, the final
diff, the JUnit report, the run log and the OpenTelemetry export (output/otel/)."""
