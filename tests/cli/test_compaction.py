"""Long runs through the real CLI: a long session with a small context window (200 turns on
one wire, 80 on the others) finishes on every wire, each request staying under the window and
the process's memory flat, because the conversation is compacted; the compaction is recorded
so `resume` continues from it; a provider that still refuses a compacted request fails the
run clearly."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from oiexec.harness.compaction import DEFAULT_HEADING, DEFAULT_INSTRUCTION
from oiexec.session.index import iter_rollouts, read_records
from tests.conftest import exec_args, run_cli
from tests.support import cli_client
from tests.support.model_server import ModelServer, Reply, Step, call, fault, reply, user_texts

WINDOW = 16_000
TURNS = 200
#: Turns on each wire: the full long run on one (memory staying flat over it is the process's
#: doing, not the wire's), on the others enough for several compactions of each wire's own
#: request shape, at a fraction of the suite's time.
WIRE_TURNS = {"responses": TURNS, "chat": 80, "messages": 80}
#: Each command prints about 2 KB (some 500 tokens), so the window fills every ~20 turns.
COMMAND = "seq -w 1 400"
#: The wire, the harness that speaks it, and its shell tool's call.
WIRES = {
    "responses": ("native", lambda: call("exec_command", {"cmd": COMMAND})),
    "chat": ("native", lambda: call("exec_command", {"cmd": COMMAND})),
    "messages": ("claude-code", lambda: call("Bash", {"command": COMMAND})),
}


def _tokens(body: Any) -> int:
    """The request body's size in the unit the window is counted in (bytes / 4), JSON
    framing included: stricter than any tokenizer."""
    return len(json.dumps(body).encode()) // 4


def _cli_rss_kib() -> int:
    """Resident memory of the CLI process this test started (its only `oiexec` child, or the
    only child of the worker's CLI fork server)."""
    server = {str(pid) for pid in cli_client.parents()} - {str(os.getpid())}
    me = str(os.getpid())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        parent = fields.get("PPid", "").strip()
        if (parent == me and b"oiexec" in cmdline) or parent in server:
            return int(fields["VmRSS"].split()[0])
    raise AssertionError("the CLI process was not found")


class LongSession:
    """The scripted model of a long run: a command per turn for `turns` turns, then an
    answer; a summary whenever it is asked for one."""

    def __init__(self, make_call: Any, turns: int = TURNS) -> None:
        self.make_call = make_call
        self.turns = turns
        self.done = 0
        self.summaries = 0
        self.rss: dict[int, int] = {}
        self.items_at: dict[int, int] = {}

    def __call__(self, body: dict[str, Any]) -> Reply:
        texts = user_texts(body)
        if texts and DEFAULT_INSTRUCTION.splitlines()[0] in texts[-1]:
            self.summaries += 1
            return reply(f"Handoff {self.summaries}: ran `{COMMAND}` {self.done} times so far.")
        if self.done in (50, self.turns):
            self.rss[self.done] = _cli_rss_kib()
            self.items_at[self.done] = len(body.get("input") or body.get("messages") or [])
        if self.done >= self.turns:
            return reply(f"Ran it {self.done} times.")
        self.done += 1
        return reply(tool_calls=[self.make_call()])

    def steps(self) -> list[Step]:
        # Every request takes the next step; each step decides from the request itself.
        return [self] * (self.turns * 2)


@pytest.mark.parametrize("wire", sorted(WIRES))
def test_a_long_session_fits_a_small_window_on_every_wire(
    model_server: ModelServer, repo: Path, wire: str
) -> None:
    harness, make_call = WIRES[wire]
    turns = WIRE_TURNS[wire]
    session = LongSession(make_call, turns)
    model_server.enqueue(*session.steps())
    result = run_cli(
        [
            *exec_args(model_server, wire=wire),
            "-c",
            f'harness="{harness}"',
            "-c",
            f"model_context_window={WINDOW}",
            "run the command again and again",
        ],
        cwd=repo,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.events[-1]["type"] == "turn.completed"
    assert session.done == turns
    assert len(result.items("command_execution")) == turns
    # Compacted more than once (the window fills about every 20 turns), each time said on
    # the stream (a warning item, as the SDKs parse it) and each time by a summary the model
    # wrote.
    notices = [i["message"] for i in result.items("error") if "context compacted" in i["message"]]
    assert len(notices) == session.summaries >= turns // 40
    # Every request stayed under the window, summary requests included.
    sizes = [_tokens(body) for body in model_server.bodies]
    assert max(sizes) < WINDOW, f"largest request about {max(sizes)} tokens"
    # The history stays bounded, so memory does: no more items at the last turn than a
    # window's worth, and over the 200-turn run the process grew by less than 20 MiB from
    # turn 50 to turn 200.
    assert session.items_at[turns] < 80
    if turns == TURNS:
        assert session.rss[TURNS] - session.rss[50] < 20 * 1024, session.rss
    # The answer came from a conversation that still holds the task and the latest summary.
    last = user_texts(model_server.bodies[-1])
    assert any("run the command again and again" in text for text in last)
    assert "".join(last).count(DEFAULT_HEADING) == 1


def _rollout(home: Path) -> list[dict[str, Any]]:
    [path] = iter_rollouts(home)
    return [record for _, record in read_records(path)]


def test_resume_continues_from_the_compacted_history(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    session = LongSession(WIRES["responses"][1], turns=40)
    model_server.enqueue(*session.steps())
    args = [*exec_args(model_server), "-c", "model_context_window=8000"]
    first = run_cli([*args, "first task"], cwd=repo, timeout=120)
    assert first.returncode == 0, first.stderr[-3000:]
    records = _rollout(oi_home)
    compacted = [r["payload"] for r in records if r["type"] == "compacted"]
    assert len(compacted) == session.summaries >= 1
    assert compacted[-1]["message"].startswith(DEFAULT_HEADING)

    model_server.enqueue(reply("resumed"))
    thread_id = first.events[0]["thread_id"]
    resumed = run_cli([*args, "resume", thread_id, "second task"], cwd=repo)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    body = model_server.bodies[-1]
    texts = user_texts(body)
    # The resumed request is the compacted conversation plus what came after it, not the
    # whole 40 turns again.
    assert texts[-1] == "second task"
    assert "first task" in texts
    assert "".join(texts).count(DEFAULT_HEADING) == 1
    assert _tokens(body) < 8_000


#: How each wire's providers say a request is too long: a plain 413, OpenAI's error code,
#: Anthropic's wording.
REFUSALS = {
    "chat": fault(413, message="Request Entity Too Large"),
    "responses": fault(
        400,
        body={
            "error": {
                "message": "Your input exceeds the context window of this model.",
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            }
        },
    ),
    "messages": fault(
        400,
        body={
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "prompt is too long: 215000 tokens > 200000 maximum",
            },
        },
    ),
}


@pytest.mark.parametrize("wire", sorted(WIRES))
def test_a_request_refused_as_too_long_is_compacted_and_retried(
    model_server: ModelServer, repo: Path, wire: str
) -> None:
    harness, make_call = WIRES[wire]
    model_server.enqueue(
        reply(tool_calls=[make_call()]),
        reply(tool_calls=[make_call()]),
        REFUSALS[wire],
        reply("Handoff: ran the command twice."),
        reply("done after compacting"),
    )
    result = run_cli(
        [*exec_args(model_server, wire=wire), "-c", f'harness="{harness}"', "keep going"],
        cwd=repo,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.items("agent_message")[-1]["text"] == "done after compacting"
    assert any("context compacted" in i["message"] for i in result.items("error"))
    retried = user_texts(model_server.bodies[-1])
    assert "".join(retried).count(DEFAULT_HEADING) == 1


def test_a_request_still_too_long_after_compaction_fails_the_run(
    model_server: ModelServer, repo: Path
) -> None:
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": COMMAND})]),
        fault(413, message="Request too large"),
        reply("Handoff note."),
        fault(413, message="Request too large"),
    )
    result = run_cli([*exec_args(model_server), "keep going"], cwd=repo)
    assert result.returncode == 1
    failure = result.events[-1]
    assert failure["type"] == "turn.failed"
    assert "too long for the model even after compacting" in failure["error"]["message"]
    assert model_server.remaining == 0


def test_model_auto_compact_token_limit_sets_when_to_compact(
    model_server: ModelServer, repo: Path
) -> None:
    # A window far larger than the run needs; Codex's key makes it compact at 6,000 tokens.
    session = LongSession(WIRES["responses"][1], turns=30)
    model_server.enqueue(*session.steps())
    result = run_cli(
        [
            *exec_args(model_server),
            "-c",
            "model_context_window=1000000",
            "-c",
            "model_auto_compact_token_limit=6000",
            "go",
        ],
        cwd=repo,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert session.summaries >= 2
    assert max(_tokens(body) for body in model_server.bodies) < 6_000 + 1_000
