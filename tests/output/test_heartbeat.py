"""While the model has not answered, the human transcript says so on stderr every interval
(`waiting for the model… 15s`), folded into the turn's group in GitHub Actions; never with
--json, and never once the first event of the answer has arrived.

The interval is shrunk with OIEXEC_HEARTBEAT_INTERVAL_MS; the scripted model's delay holds
the answer back several intervals, so the assertions count lines, not time.
"""

from __future__ import annotations

import io
import threading
from pathlib import Path

import pytest

from oiexec.output.heartbeat import Heartbeat, elapsed_text
from oiexec.output.human import HumanProcessor
from tests.conftest import CliResult, run_cli
from tests.support.model_server import ModelServer, Wire, reply, stall

BEAT = "waiting for the model… "


def human_run(
    server: ModelServer, repo: Path, *extra: str, wire: Wire = "responses", **env: str
) -> CliResult:
    args = ["exec", "-s", "danger-full-access", *server.config_args(wire_api=wire), *extra, "go"]
    return run_cli(args, cwd=repo, env={"OIEXEC_HEARTBEAT_INTERVAL_MS": "100", **env})


def beats(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(BEAT)]


def test_a_slow_model_gets_a_heartbeat_until_it_answers(
    model_server: ModelServer, repo: Path
) -> None:
    model_server.model.delay_s = 1.5
    model_server.enqueue(reply("all done"))

    result = human_run(model_server, repo)

    assert result.returncode == 0, result.stderr
    assert result.stdout == "all done\n"  # stdout keeps only the answer
    lines = result.stderr.splitlines()
    found = beats(result.stderr)
    assert found[:2] == [BEAT + "0.1s", BEAT + "0.2s"]
    # Every line is due one interval after the previous, and none comes after the answer.
    assert found == [BEAT + elapsed_text(0.1 * n) for n in range(1, len(found) + 1)]
    assert lines.index(found[-1]) < lines.index("assistant")
    # The variable tunes the display; it is not mistaken for a config key.
    assert "unknown config key" not in result.stderr


#: How many events each wire sends before the first one carrying the answer: Responses'
#: `response.created`, Messages' `message_start` and `ping`; a chat chunk is an answer.
PREAMBLE: dict[Wire, int] = {"responses": 1, "chat": 0, "messages": 2}


@pytest.mark.parametrize("wire", ["responses", "chat", "messages"])
def test_no_heartbeat_once_the_answer_has_started_streaming(
    model_server: ModelServer, repo: Path, wire: Wire
) -> None:
    # The first event of the answer comes at once, then the stream pauses four intervals.
    first = PREAMBLE[wire] + 1
    model_server.enqueue(stall(2.0, after_events=first, reply=reply("streamed slowly")))

    result = human_run(model_server, repo, wire=wire, OIEXEC_HEARTBEAT_INTERVAL_MS="500")

    assert result.returncode == 0, result.stderr
    assert result.stdout == "streamed slowly\n"
    assert beats(result.stderr) == []


@pytest.mark.parametrize("wire", ["responses", "messages"])
def test_a_request_taken_but_not_yet_answered_still_gets_the_heartbeat(
    model_server: ModelServer, repo: Path, wire: Wire
) -> None:
    # `response.created` / `message_start` at once, then nothing while the model thinks.
    model_server.enqueue(stall(1.5, after_events=PREAMBLE[wire], reply=reply("thought it over")))

    result = human_run(model_server, repo, wire=wire)

    assert result.returncode == 0, result.stderr
    assert result.stdout == "thought it over\n"
    assert beats(result.stderr)[:2] == [BEAT + "0.1s", BEAT + "0.2s"]


def test_json_mode_has_no_heartbeat(model_server: ModelServer, repo: Path) -> None:
    model_server.model.delay_s = 0.6
    model_server.enqueue(reply("quiet"))

    result = human_run(model_server, repo, "--json")

    assert result.returncode == 0, result.stderr
    assert beats(result.stderr) == []
    assert result.events[-1]["type"] == "turn.completed"  # stdout stays pure JSONL


def test_in_github_actions_the_heartbeat_folds_into_the_turn_group(
    model_server: ModelServer, repo: Path
) -> None:
    model_server.model.delay_s = 0.6
    model_server.enqueue(reply("folded"))

    result = human_run(model_server, repo, GITHUB_ACTIONS="true")

    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    found = beats(result.stderr)
    assert found
    opened, closed = lines.index("::group::Turn 1"), lines.index("::endgroup::")
    assert all(opened < lines.index(line) < closed for line in found)


def test_zero_turns_the_heartbeat_off(model_server: ModelServer, repo: Path) -> None:
    model_server.model.delay_s = 0.6
    model_server.enqueue(reply("silent wait"))

    result = human_run(model_server, repo, OIEXEC_HEARTBEAT_INTERVAL_MS="0")

    assert result.returncode == 0, result.stderr
    assert beats(result.stderr) == []


def test_a_retried_request_keeps_counting_and_nothing_is_written_after_answered() -> None:
    written: list[str] = []
    grew = threading.Condition()

    def write(text: str) -> None:
        with grew:
            written.append(text)
            grew.notify_all()

    def until(count: int) -> bool:
        with grew:
            return grew.wait_for(lambda: len(written) >= count, timeout=10)

    heartbeat = Heartbeat(write, 0.1)
    heartbeat.waiting()
    assert until(1)
    heartbeat.waiting()  # a retry of the same request: the same count goes on
    assert until(3)
    heartbeat.answered()
    count = len(written)
    threading.Event().wait(0.3)  # three more intervals: a beat still running would write
    heartbeat.answered()  # idempotent

    assert written[:3] == [BEAT + "0.1s", BEAT + "0.2s", BEAT + "0.3s"]
    assert len(written) == count


def test_the_human_processor_writes_beats_between_its_own_lines() -> None:
    stderr, stdout = io.StringIO(), io.StringIO()
    processor = HumanProcessor(stderr, stdout, color=False, heartbeat_interval=0.02)
    processor.warning("before")
    processor.waiting()
    for _ in range(1000):
        if BEAT in stderr.getvalue():
            break
        threading.Event().wait(0.01)
    processor.answered()
    processor.warning("after")
    processor.close()

    lines = stderr.getvalue().splitlines()
    assert lines[0] == "warning: before" and lines[-1] == "warning: after"
    assert lines[1:-1] and all(line.startswith(BEAT) for line in lines[1:-1])


def test_elapsed_time_reads_as_seconds_then_minutes() -> None:
    assert [elapsed_text(s) for s in (15, 30, 45, 60, 90, 615)] == [
        "15s",
        "30s",
        "45s",
        "1m00s",
        "1m30s",
        "10m15s",
    ]
