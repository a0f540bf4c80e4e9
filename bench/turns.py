"""What a model turn costs the runner, and whether a long run's memory stays flat.

    python bench/turns.py [--runs N] [--turns 40] [--long 100,300]
                          [--sandbox danger-full-access] [--interpreter PATH]

Every run is the real CLI (`interpreter exec --json`) as a child process against the scripted
model server on 127.0.0.1 with zero latency, so what is measured is the runner itself.

- Runner time of N cheap turns: CPU (user + sys of the process and everything it waited for)
  of an N-turn run minus that of a 1-turn run (start-up and the final answer cancel out),
  minus what the N-1 commands cost when run directly the same way (`/bin/bash -c 'echo ...'`).
  Printed for two kinds of turn: a shell command (`echo`) and a tool call that runs no
  process at all (`update_plan`). Wall time is printed beside it (the machine may be busy;
  CPU is the figure the verdict uses). Medians of --runs pairs, run alternately.
- Memory of a long run: peak RSS of a run of 100 and of 300 turns, each printing about 2 KB
  (`seq -w 1 400`) into a 16,000-token context window, so the conversation is compacted every
  ~20 turns (the model answers each summary request with a short handoff). Flat means the
  300-turn run peaks no more than FLAT_MIB above the 100-turn one.

Targets: 40 cheap turns <= 0.6 s of runner time (CPU, either kind of turn); 300 turns no more
than 4 MiB above 100 turns at peak. A figure over its target prints OVER TARGET.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# The measuring and the scratch repository are the other benches' own (bench/ is on sys.path
# when this runs as a script).
from batch import interpreter_argv, make_repo  # noqa: E402
from run import Measure, run_measured  # noqa: E402

from oiexec.harness.compaction import DEFAULT_INSTRUCTION  # noqa: E402
from tests.support.model_server import (  # noqa: E402
    ModelServer,
    Reply,
    call,
    reply,
    running_model_server,
    user_texts,
)

TURNS_TARGET_S = 0.6
FLAT_MIB = 4.0
#: The long run: a window small enough that the conversation is compacted every ~20 turns.
WINDOW = 16_000
LONG_COMMAND = "seq -w 1 400"
#: How the scripted model tells a summary request from a turn: its first line.
SUMMARY_MARK = DEFAULT_INSTRUCTION.splitlines()[0]


def echo_turn(n: int) -> Reply:
    return reply(tool_calls=[call("exec_command", {"cmd": f"echo turn {n}"})])


def plan_turn(n: int) -> Reply:
    plan = [{"step": f"step {n}", "status": "in_progress"}]
    return reply(tool_calls=[call("update_plan", {"plan": plan})])


KINDS: dict[str, Callable[[int], Reply]] = {"echo": echo_turn, "update_plan": plan_turn}


def run_cli(
    argv: list[str], server: ModelServer, extra: list[str], sandbox: str, expect: Callable[[], int]
) -> Measure:
    """Runs the CLI against `server`; warns when it failed or did not make `expect()` requests."""
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        repo = make_repo(base)
        env = dict(os.environ, OPENINTERPRETER_HOME=str(base / "oi-home"))
        command = [*argv, "exec", "--json", "-s", sandbox, *server.config_args(), *extra, "go"]
        measure = run_measured(command, cwd=repo, env=env)
    if measure.code != 0 or len(server.bodies) != expect():
        print(
            f"  warning: run exited {measure.code} after {len(server.bodies)} of {expect()} "
            f"requests; {server.model.errors[:2]}",
            file=sys.stderr,
        )
    return measure


def run_turns(argv: list[str], turns: int, kind: str, sandbox: str) -> Measure:
    """One run of `turns` model turns: turns-1 tool calls of `kind`, then the answer."""
    with running_model_server() as server:
        server.enqueue(*(KINDS[kind](n) for n in range(1, turns)), reply("done"))
        return run_cli(argv, server, [], sandbox, lambda: turns)


def commands_cpu(turns: int) -> float:
    """CPU of the turns-1 `echo` commands run directly, as the runner's shell runs them."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for n in range(1, turns):
        subprocess.run(["/bin/bash", "-c", f"echo turn {n}"], capture_output=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


class LongModel:
    """A turn per request, each running LONG_COMMAND, until `turns`; then the answer. A
    summary request gets a short handoff."""

    def __init__(self, turns: int) -> None:
        self.turns = turns
        self.done = 0
        self.summaries = 0

    def __call__(self, body: dict[str, Any]) -> Reply:
        texts = user_texts(body)
        if texts and SUMMARY_MARK in texts[-1]:
            self.summaries += 1
            return reply(f"Handoff {self.summaries}: ran `{LONG_COMMAND}` {self.done} times.")
        if self.done >= self.turns:
            return reply(f"Ran it {self.done} times.")
        self.done += 1
        return reply(tool_calls=[call("exec_command", {"cmd": LONG_COMMAND})])


def run_long(argv: list[str], turns: int, sandbox: str) -> tuple[Measure, int]:
    model = LongModel(turns)
    with running_model_server() as server:
        server.enqueue(*[model] * (turns * 2))
        extra = ["-c", f"model_context_window={WINDOW}"]
        measure = run_cli(argv, server, extra, sandbox, lambda: turns + 1 + model.summaries)
    return measure, model.summaries


def verdict(value: float, target: float) -> str:
    return "ok" if value <= target else "OVER TARGET"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--long", default="100,300", help="turns of the two long runs")
    parser.add_argument(
        "--sandbox", default="danger-full-access", choices=["danger-full-access", "workspace-write"]
    )
    parser.add_argument("--interpreter", help="the `interpreter` to measure")
    args = parser.parse_args()
    argv = interpreter_argv(args.interpreter)
    short, long_ = (int(n) for n in args.long.split(","))
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}, runs={args.runs}")
    print(f"measuring: {' '.join(argv)} exec -s {args.sandbox}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    floor = statistics.median(commands_cpu(args.turns) for _ in range(3))
    print(f"{args.turns - 1} echo commands run directly: cpu {floor * 1000:6.0f} ms")
    for kind in KINDS:
        ones: list[Measure] = []
        manys: list[Measure] = []
        for _ in range(args.runs):  # alternately, so a busy spell hits both alike
            ones.append(run_turns(argv, 1, kind, args.sandbox))
            manys.append(run_turns(argv, args.turns, kind, args.sandbox))
        cpu = statistics.median(m.cpu for m in manys) - statistics.median(m.cpu for m in ones)
        wall = statistics.median(m.wall for m in manys) - statistics.median(m.wall for m in ones)
        commands = floor if kind == "echo" else 0.0
        runner = cpu - commands
        one_cpu = statistics.median(m.cpu for m in ones)
        many_cpu = statistics.median(m.cpu for m in manys)
        print(
            f"{args.turns} turns of {kind:<12} 1 turn: cpu {one_cpu * 1000:5.0f} ms"
            f"   {args.turns} turns: cpu {many_cpu * 1000:5.0f} ms"
            f"   added: wall {wall * 1000:5.0f} ms, cpu {cpu * 1000:5.0f} ms"
        )
        print(
            f"  runner time of {args.turns} turns (cpu, commands' own {commands * 1000:.0f} ms "
            f"taken off): {runner * 1000:.0f} ms = {runner / (args.turns - 1) * 1000:.1f} ms a "
            f"turn (target <= {TURNS_TARGET_S * 1000:.0f} ms) {verdict(runner, TURNS_TARGET_S)}"
        )

    peaks = {}
    for turns in (short, long_):
        measure, summaries = run_long(argv, turns, args.sandbox)
        peaks[turns] = measure.rss_mib
        print(
            f"{turns} turns, window {WINDOW}: wall {measure.wall:5.1f} s   cpu {measure.cpu:5.1f} s"
            f"   peak RSS {measure.rss_mib:5.1f} MiB   {summaries} compactions"
            f"   {(measure.cpu / turns) * 1000:.1f} ms cpu a turn"
        )
    grown = peaks[long_] - peaks[short]
    print(
        f"  memory: {long_} turns peak {grown:+.1f} MiB over {short} turns "
        f"(target <= +{FLAT_MIB:.0f} MiB) {verdict(grown, FLAT_MIB)}"
    )


if __name__ == "__main__":
    main()
