"""`[otel]`: what a run reports to a team's telemetry, as their collector receives it. The real
CLI runs against the scripted model server and exports to a local OTLP/HTTP collector
(tests/support/otlp_receiver.py) that decodes the requests with the protocol's own types."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import CliResult, exec_args, run_cli
from tests.support.model_server import ModelServer, call, reply, usage
from tests.support.otlp_receiver import OtlpReceiver, Span

PROMPT = "count the files in this repo, please"
ANSWER = "there are three files"
OTLP_TOKEN = "otlp-token-5f2c9e81d4"
API_KEY = "sk-provider-key-77aa41c0"
#: $2 per million input tokens, $10 per million output tokens.
PRICE = ("-c", "model_pricing.input_per_mtok=2", "-c", "model_pricing.output_per_mtok=10")
#: Two requests of 1,000 input and 200 output tokens: (2,000 × $2 + 400 × $10) / 1e6.
COST = 0.008


@pytest.fixture
def collector() -> Iterator[OtlpReceiver]:
    receiver = OtlpReceiver().start()
    yield receiver
    receiver.stop()


def _config(home: Path, endpoint: str, extra: str = "") -> None:
    # Codex's shape: the logs URL of the shared exporter, a token from the environment.
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f"""
[otel]
environment = "ci"
{extra}
[otel.exporter.otlp-http]
endpoint = "{endpoint}/v1/logs"
protocol = "binary"
headers = {{ "authorization" = "Bearer ${{OTLP_TOKEN}}" }}
"""
    )


def _run(model_server: ModelServer, repo: Path, *extra: str) -> CliResult:
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": "echo counted"})], usage=usage(1000, 200)),
        reply(ANSWER, usage=usage(1000, 200)),
    )
    args = exec_args(model_server, env_key="SCRIPTED_KEY")
    return run_cli(
        [*args, *PRICE, *extra, PROMPT],
        cwd=repo,
        env={"OTLP_TOKEN": OTLP_TOKEN, "SCRIPTED_KEY": API_KEY},
    )


def _by_name(spans: list[Span]) -> dict[str, list[Span]]:
    found: dict[str, list[Span]] = {}
    for span in spans:
        found.setdefault(span.name, []).append(span)
    return found


def test_a_run_exports_its_spans_and_metrics_without_prompt_output_or_keys(
    model_server: ModelServer, repo: Path, oi_home: Path, collector: OtlpReceiver
) -> None:
    _config(oi_home, collector.url)

    done = _run(model_server, repo)

    assert done.returncode == 0, done.stderr
    assert "otel" not in done.stderr
    # One request per signal, each at its own path of the collector named by its logs URL.
    assert sorted(e.path for e in collector.exports) == ["/v1/metrics", "/v1/traces"]
    spans = _by_name(collector.spans())
    assert sorted(spans) == [
        "oiexec.command", "oiexec.model_request", "oiexec.run", "oiexec.tool_call", "oiexec.turn"
    ]  # fmt: skip
    [run], [turn] = spans["oiexec.run"], spans["oiexec.turn"]
    [tool], [command] = spans["oiexec.tool_call"], spans["oiexec.command"]
    requests = spans["oiexec.model_request"]
    assert len(requests) == 2
    # One trace: run > turn > (model requests, tool call > command).
    assert run.parent_span_id == b""
    assert turn.parent_span_id == run.span_id
    assert all(r.parent_span_id == turn.span_id for r in requests)
    assert tool.parent_span_id == turn.span_id
    assert command.parent_span_id == tool.span_id
    assert len({s.trace_id for s in collector.spans()}) == 1

    assert run.attributes["oiexec.exit_class"] == "success"
    assert run.attributes["oiexec.exit_code"] == 0
    assert run.attributes["oiexec.cost_usd"] == pytest.approx(COST)
    assert run.attributes["gen_ai.usage.input_tokens"] == 2000
    assert run.attributes["gen_ai.usage.output_tokens"] == 400
    assert run.attributes["oiexec.thread_id"] == done.events[0]["thread_id"]
    assert run.attributes["gen_ai.provider.name"] == "scripted"
    assert all(r.attributes["gen_ai.usage.input_tokens"] == 1000 for r in requests)
    assert turn.attributes["oiexec.cost_usd"] == pytest.approx(COST)
    assert tool.attributes["gen_ai.tool.name"] == "exec_command"
    assert "echo counted" in command.attributes["oiexec.command"]
    assert command.attributes["process.exit.code"] == 0
    assert collector.resource()["service.name"] == "oiexec"
    assert collector.resource()["deployment.environment.name"] == "ci"

    metrics = collector.metrics()
    tokens = {attrs["gen_ai.token.type"]: value for attrs, value in metrics["oiexec.token.usage"]}
    assert tokens["input"] == 2000 and tokens["output"] == 400
    [(_, cost)] = metrics["oiexec.cost.usage"]
    assert cost == pytest.approx(COST)
    [(attrs, runs)] = metrics["oiexec.run.count"]
    assert (attrs["oiexec.exit_class"], runs) == ("success", 1)
    [(_, seconds)] = metrics["oiexec.run.duration"]
    assert 0 < seconds < 60

    # The collector's token is sent with every request, and is nowhere in what is exported;
    # neither is the provider's key, the prompt, the answer or the command's output.
    assert [e.headers["authorization"] for e in collector.exports] == [f"Bearer {OTLP_TOKEN}"] * 2
    for export in collector.exports:
        for text in (OTLP_TOKEN, API_KEY, PROMPT, ANSWER, "counted\n"):
            assert text.encode() not in export.body, text


def test_prompt_and_outputs_are_exported_when_opted_in(
    model_server: ModelServer, repo: Path, oi_home: Path, collector: OtlpReceiver
) -> None:
    # Metrics to Codex's gRPC exporter, which oiexec does not speak: said, and skipped.
    grpc = 'metrics_exporter = { otlp-grpc = { endpoint = "http://127.0.0.1:4317" } }'
    _config(oi_home, collector.url, f"log_user_prompt = true\nlog_outputs = true\n{grpc}")

    done = _run(model_server, repo)

    assert done.returncode == 0, done.stderr
    assert [line for line in done.stderr.splitlines() if "otel" in line] == [
        "warning: otel: metrics_exporter uses otlp-grpc, which oiexec does not speak "
        "(use otlp-http): metrics not exported"
    ]
    assert [e.path for e in collector.exports] == ["/v1/traces"]
    spans = _by_name(collector.spans())
    assert spans["oiexec.turn"][0].attributes["oiexec.prompt"] == PROMPT
    assert spans["oiexec.run"][0].attributes["oiexec.final_message"] == ANSWER
    assert spans["oiexec.command"][0].attributes["oiexec.command.output"] == "counted\n"
    assert "echo counted" in spans["oiexec.tool_call"][0].attributes["gen_ai.tool.call.arguments"]
    # Opting in to the text never exports the keys.
    for export in collector.exports:
        assert OTLP_TOKEN.encode() not in export.body and API_KEY.encode() not in export.body


def test_a_run_that_hits_a_limit_exports_its_exit_class(
    model_server: ModelServer, repo: Path, oi_home: Path, collector: OtlpReceiver
) -> None:
    _config(oi_home, collector.url)

    done = _run(model_server, repo, "--max-turns", "1")

    assert done.returncode == 4, done.stderr  # the documented exit code of --max-turns
    spans = _by_name(collector.spans())
    run, turn = spans["oiexec.run"][0], spans["oiexec.turn"][0]
    assert run.attributes["oiexec.exit_class"] == "max_turns"
    assert run.attributes["oiexec.exit_code"] == 4
    assert run.status_code == turn.status_code == 2  # STATUS_CODE_ERROR
    assert "--max-turns" in run.status_message
    [(attrs, _)] = collector.metrics()["oiexec.run.count"]
    assert attrs["oiexec.exit_class"] == "max_turns"


@pytest.mark.parametrize(
    ("collector_state", "reason"),
    [("unreachable", "Connection refused"), ("never answers", "no answer within 3s")],
)
def test_a_collector_that_cannot_take_the_export_costs_one_warning_not_the_run(
    model_server: ModelServer, repo: Path, oi_home: Path, collector_state: str, reason: str
) -> None:
    receiver = OtlpReceiver(hang=collector_state == "never answers").start()
    url = receiver.url
    if collector_state == "unreachable":
        receiver.stop()  # nothing listens on the port any more
    _config(oi_home, url)
    try:
        started = time.monotonic()
        done = _run(model_server, repo)
        elapsed = time.monotonic() - started
    finally:
        if collector_state != "unreachable":
            receiver.stop()

    assert done.returncode == 0, done.stderr
    assert done.events[-1]["type"] == "turn.completed"
    warnings = [line for line in done.stderr.splitlines() if "otel" in line]
    assert len(warnings) == 1, done.stderr
    assert "otel: spans and metrics not exported to http://127.0.0.1:" in warnings[0]
    assert warnings[0].endswith(reason)
    assert OTLP_TOKEN not in done.stderr
    # The export is waited for a few seconds at most (EXPORT_WAIT_S), the run's own work aside.
    assert elapsed < 15, elapsed
