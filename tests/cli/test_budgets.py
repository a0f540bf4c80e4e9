"""`--max-tokens` and `--max-cost` through the real CLI: checked after every model response,
each ending the run with its own exit code and a `turn.failed` (and JUnit failure) naming the
limit, as `--max-turns` does."""

from __future__ import annotations

from pathlib import Path

from oiexec.session.index import iter_rollouts, load_rollout
from tests.conftest import exec_args, run_cli
from tests.support.model_server import ModelServer, Reply, call, reply, usage

PRICE = ["-c", "model_pricing.input_per_mtok=10", "-c", "model_pricing.output_per_mtok=30"]


def _turns(n: int, input_tokens: int, output_tokens: int) -> list[Reply]:
    """`n` tool turns then an answer, each response reporting this usage."""
    spent = usage(input_tokens=input_tokens, output_tokens=output_tokens)
    turn = reply(tool_calls=[call("exec_command", {"cmd": "true"})], usage=spent)
    return [*[turn] * n, reply("done", usage=spent)]


def test_max_tokens_is_9_and_names_the_limit(
    model_server: ModelServer, repo: Path, tmp_path: Path, oi_home: Path
) -> None:
    model_server.enqueue(*_turns(5, 400, 100))
    junit = tmp_path / "junit.xml"
    result = run_cli(
        [*exec_args(model_server), "--max-tokens", "1000", "--junit", str(junit), "loop"],
        cwd=repo,
    )
    assert result.returncode == 9, result.stderr
    failed = result.events[-1]
    assert failed["type"] == "turn.failed"
    message = failed["error"]["message"]
    assert "token limit reached" in message and "--max-tokens 1000" in message
    assert "1,500 tokens" in message
    # 500 tokens a response: the third one went past the budget and nothing was asked after.
    assert len(model_server.model_requests) == 3
    assert 'type="budget"' in junit.read_text()
    assert '"failure_reason" value="max_tokens"' in junit.read_text()
    # What the failed run spent is in the session, for a resume to continue counting.
    [rollout] = iter_rollouts(oi_home)
    spent = load_rollout(rollout).usage
    assert (spent.input_tokens, spent.output_tokens) == (1200, 300)


def test_max_cost_is_10_and_names_the_limit(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    # $10 / $30 per million: 1,000 in and 100 out cost $0.013 a response.
    model_server.enqueue(*_turns(5, 1000, 100))
    junit = tmp_path / "junit.xml"
    result = run_cli(
        [
            *exec_args(model_server),
            *PRICE,
            "--max-cost",
            "0.03",
            "--junit",
            str(junit),
            "loop",
        ],
        cwd=repo,
    )
    assert result.returncode == 10, result.stderr
    message = result.events[-1]["error"]["message"]
    assert result.events[-1]["type"] == "turn.failed"
    assert "cost limit reached" in message and "--max-cost 0.03" in message
    assert "$0.0390" in message
    assert len(model_server.model_requests) == 3
    assert 'type="budget"' in junit.read_text()
    assert '"failure_reason" value="max_cost"' in junit.read_text()


def test_a_run_within_its_budgets_completes(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(*_turns(2, 1000, 100))
    result = run_cli(
        [*exec_args(model_server), *PRICE, "--max-tokens", "3300", "--max-cost", "0.04", "go"],
        cwd=repo,
    )
    assert result.returncode == 0, result.stderr
    assert result.events[-1]["type"] == "turn.completed"


def test_human_mode_says_which_budget_ended_the_run(model_server: ModelServer, repo: Path) -> None:
    model_server.enqueue(*_turns(3, 400, 100))
    args = [a for a in exec_args(model_server) if a != "--json"]
    result = run_cli([*args, "--max-tokens", "600", "loop"], cwd=repo)
    assert result.returncode == 9
    assert "ERROR: token limit reached" in result.stderr
    assert "--max-tokens 600" in result.stderr
    assert result.stdout == ""


def test_max_cost_without_a_price_refuses_to_start(model_server: ModelServer, repo: Path) -> None:
    result = run_cli(
        [*exec_args(model_server), "-m", "no-such-model-anywhere", "--max-cost", "1", "go"],
        cwd=repo,
    )
    assert result.returncode == 3
    assert "--max-cost" in result.stderr and "model_pricing" in result.stderr
    assert model_server.model_requests == []


def test_a_resumed_run_has_its_own_budget(model_server: ModelServer, repo: Path) -> None:
    # The first run spends 1,500 tokens; the budget of the resumed run starts again at zero,
    # while the thread's usage keeps adding up.
    model_server.enqueue(*_turns(2, 400, 100))
    first = run_cli([*exec_args(model_server), "first"], cwd=repo)
    assert first.returncode == 0, first.stderr
    model_server.enqueue(reply("again", usage=usage(input_tokens=400, output_tokens=100)))
    thread = first.events[0]["thread_id"]
    resumed = run_cli(
        [*exec_args(model_server), "--max-tokens", "1000", "resume", thread, "more"], cwd=repo
    )
    assert resumed.returncode == 0, resumed.stderr
    total = resumed.events[-1]["usage"]
    assert (total["input_tokens"], total["output_tokens"]) == (1600, 400)
