"""What a run cost, as a user reads it: `turn.completed`'s `cost_usd` and
`session_cost_usd`, the JUnit report's properties and the transcript's closing line, priced
with `[model_pricing]` from config; and a model with no known price, whose cost is unknown
(null) with one note on stderr."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from tests.conftest import exec_args, run_cli
from tests.support.model_server import ModelServer, remember_catalog_answer, reply, usage

#: $2 per million input tokens, $0.50 cached, $10 output (reasoning included).
PRICE = (
    *("-c", "model_pricing.input_per_mtok=2"),
    *("-c", "model_pricing.cached_input_per_mtok=0.5"),
    *("-c", "model_pricing.output_per_mtok=10"),
)
#: 900 fresh input tokens at $2, 300 cached at $0.50, 500 output at $10 per million:
#: (1800 + 150 + 5000) / 1e6.
COST = 0.00695


def test_a_priced_run_and_its_resume_report_their_cost_and_the_sessions(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    model_server.enqueue(
        reply(
            "done",
            usage=usage(1200, 500, cached_input_tokens=300, reasoning_output_tokens=200),
        ),
        reply("again", usage=usage(1200, 500, cached_input_tokens=300)),
    )
    junit = tmp_path / "report.xml"
    first = run_cli([*exec_args(model_server), *PRICE, "--junit", str(junit), "go"], cwd=repo)

    assert first.returncode == 0, first.stderr
    completed = first.events[-1]
    assert completed["type"] == "turn.completed"
    assert completed["usage"]["input_tokens"] == 1200  # Codex's field, unchanged
    assert completed["cost_usd"] == completed["session_cost_usd"] == COST
    properties = {
        prop.get("name"): prop.get("value")
        for prop in ElementTree.parse(junit).getroot().iter("property")
    }
    assert properties["cost_usd"] == properties["session_cost_usd"] == "0.00695"
    assert properties["input_tokens"] == "1200" and properties["output_tokens"] == "500"
    assert "cost unknown" not in first.stderr

    # Resumed in human mode: the closing line gives this run's figures and the session's.
    thread_id = first.events[0]["thread_id"]
    args = ["exec", "-s", "danger-full-access", *model_server.config_args(), *PRICE]
    resumed = run_cli([*args, "resume", thread_id, "once more"], cwd=repo)

    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout == "again\n"  # the answer alone
    last = resumed.stderr.strip().splitlines()[-1]
    assert last == "tokens used: 1,700 (session: 3,400); cost: $0.0069 (session: $0.0139)"


def test_a_model_without_a_price_costs_null_with_one_note(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    # The catalog's answer (nothing) remembered, as for the default model (fixture).
    remember_catalog_answer(model_server, oi_home, "no-such-model-anywhere")
    model_server.enqueue(reply("done", usage=usage(1200, 500)))
    args = [*exec_args(model_server), "-m", "no-such-model-anywhere", "go"]
    result = run_cli(args, cwd=repo)

    assert result.returncode == 0, result.stderr
    # stdout is the event stream alone; the note is on stderr, once.
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events[-1]["type"] == "turn.completed"
    assert events[-1]["cost_usd"] is None and events[-1]["session_cost_usd"] is None
    assert "cost unknown" not in result.stdout
    notes = [line for line in result.stderr.splitlines() if "cost unknown" in line]
    assert notes == [
        "warning: cost unknown: no price is known for model `no-such-model-anywhere` at "
        "provider `scripted`; set it with [model_pricing] in config"
    ]
