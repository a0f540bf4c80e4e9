"""Throughput and memory of `interpreter batch` at several --jobs.

    python bench/batch.py [--tasks 16] [--turns 6] [--delay 0.2] [--jobs 1,4,8]
                          [--sandbox workspace-write] [--interpreter PATH]

A scripted model server on 127.0.0.1 answers every request after --delay seconds (a model's
latency, during which a task waits and others can run). Each of --tasks tasks takes --turns
model turns: a cheap shell command (`echo`) per turn, the last turn the final answer; each
task has its own scripted conversation (a route keyed by a marker in its prompt). The same
batch then runs at each --jobs, in a fresh output directory.

Measured for each run of the whole batch:
- wall time, from starting `interpreter batch` to its exit;
- peak RSS of the whole process tree: every 20 ms the tree under the batch process is walked
  through /proc/<pid>/task/<tid>/children and the resident set of each process
  (/proc/<pid>/statm) is summed; the peak of those sums is reported. Shared pages (the
  Python binary, libraries) count once per process, so this overstates what the tree takes
  from the machine; the peak sum of PSS (/proc/<pid>/smaps_rollup, shared pages divided
  among their users) is printed beside it;
- CPU time of the tree: user + sys of every process seen in it (/proc/<pid>/stat, the last
  sample of each; the task processes are forks of the batch's preloaded zygote, so rusage
  of reaped children would miss them; the last 20 ms of each process and the sandboxed
  commands' bwrap, reparented away, are not counted), and how busy the machine's cores
  were during the run (/proc/stat, everything running, other programs included): near 100%
  means the cores, not the model, were the limit.

Targets: at 8 jobs at least 6x faster than at 1 job; peak RSS of the tree under 8 x 60 MiB.
Beside the RSS target, memory per task as the machine pays it: the peak PSS of the whole tree
(launcher and batch process included) divided by the jobs, against the same 60 MiB. Tasks are
forks of one preloaded process, so their RSS each count the pages they share with it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.model_server import ModelServer, call, reply, running_model_server  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")
SAMPLE_S = 0.02
SPEEDUP_TARGET = 6.0
RSS_TARGET_MIB = 8 * 60


@dataclass
class Run:
    jobs: int
    #: Share of the machine's CPU time that was busy during the run (all processes, this
    #: batch's and anything else running), from /proc/stat.
    busy: float
    #: At the RSS peak: kind of process -> (how many, their summed RSS in MiB).
    at_peak: dict[str, tuple[int, float]]
    wall: float
    cpu: float
    peak_rss_mib: float
    peak_pss_mib: float
    peak_processes: int
    succeeded: int
    code: int


# ---------------------------------------------------------------------------------------------
# The process tree, from /proc


def _cpu_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of all cores since boot."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def _tree(root: int) -> list[int]:
    """`root` and every descendant still alive."""
    found: list[int] = []
    stack = [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    stack.extend(int(child) for child in f.read().split())
            except OSError:
                pass
    return found


TICK = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU of `pid` so far (not its children's)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except (OSError, IndexError, ValueError):
        return None


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


def _kind(pid: int) -> str:
    """What a process in the tree is: `interpreter batch`, `interpreter exec`, or its
    program's name (bwrap, bash, git, ...)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return "?"
    for word in ("batch", "exec"):
        if word in argv and any("oiexec" in a or a.endswith("interpreter") for a in argv):
            return f"interpreter {word}"
    return Path(argv[0]).name if argv else "?"


def _parent(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _pss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return 0


class TreeSampler(threading.Thread):
    """Samples the tree's summed RSS and PSS every SAMPLE_S until stopped; keeps the peaks."""

    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.stop = threading.Event()
        self.peak_rss = 0
        self.peak_pss = 0
        self.peak_processes = 0
        self.at_peak: dict[str, tuple[int, float]] = {}
        self.samples = 0
        self.cpu: dict[int, float] = {}

    def run(self) -> None:
        while not self.stop.is_set():
            pids = _tree(self.root)
            for pid in pids:
                used = _cpu_seconds(pid)
                if used is not None:
                    self.cpu[pid] = used
            rss = {pid: _rss_bytes(pid) for pid in pids}
            if sum(rss.values()) > self.peak_rss:
                self.peak_rss = sum(rss.values())
                kinds: dict[str, tuple[int, float]] = {}
                names = {pid: _kind(pid) for pid in rss}
                for pid, size in rss.items():
                    name = names[pid]
                    if names.get(_parent(pid)) == name:
                        # A fork on its way to exec() a command: its RSS is its parent's
                        # pages, shared copy-on-write, counted a second time.
                        name += " (fork)"
                    count, total = kinds.get(name, (0, 0.0))
                    kinds[name] = (count + 1, total + size / 2**20)
                self.at_peak = kinds
            self.peak_pss = max(self.peak_pss, sum(_pss_bytes(pid) for pid in pids))
            self.peak_processes = max(self.peak_processes, len(pids))
            self.samples += 1
            self.stop.wait(SAMPLE_S)


# ---------------------------------------------------------------------------------------------
# The batch


def make_repo(base: Path) -> Path:
    repo = base / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("bench\n")
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@b"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=repo, check=True)
    return repo


def write_tasks(path: Path, tasks: int) -> list[str]:
    ids = [f"task-{i:02d}" for i in range(tasks)]
    path.write_text("".join(json.dumps({"id": i, "prompt": f"Run {i}/ now."}) + "\n" for i in ids))
    return ids


def script(server: ModelServer, ids: list[str], turns: int) -> None:
    """`turns` model turns per task: turns-1 shell commands, then the answer."""
    for task_id in ids:
        steps = [
            reply(tool_calls=[call("exec_command", {"cmd": f"echo {task_id} turn {n}"})])
            for n in range(1, turns)
        ]
        server.route(f"Run {task_id}/", *steps, reply(f"{task_id} done"))


def interpreter_argv(explicit: str | None) -> list[str]:
    if explicit:
        return [explicit]
    installed = Path(sys.prefix) / "bin" / "interpreter"
    return [str(installed)] if installed.exists() else [sys.executable, "-m", "oiexec"]


def run_batch(argv: list[str], base: Path, repo: Path, jobs: int, args: argparse.Namespace) -> Run:
    tasks_file = base / "tasks.jsonl"
    out = base / f"out-jobs-{jobs}"
    log = base / f"batch-jobs-{jobs}.log"
    with running_model_server() as server:
        server.model.delay_s = args.delay
        ids = write_tasks(tasks_file, args.tasks)
        script(server, ids, args.turns)
        home = base / f"oi-home-{jobs}"
        home.mkdir()
        env = {**os.environ, "OPENINTERPRETER_HOME": str(home)}
        command = [
            *argv,
            "batch",
            str(tasks_file),
            "--out",
            str(out),
            "--jobs",
            str(jobs),
            "-s",
            args.sandbox,
            *server.config_args(),
        ]
        busy_before, total_before = _cpu_ticks()
        with open(log, "w") as stderr:
            started = time.perf_counter()
            proc = subprocess.Popen(
                command, cwd=repo, env=env, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=stderr,
            )  # fmt: skip
            sampler = TreeSampler(proc.pid)
            sampler.start()
            code = proc.wait()
            wall = time.perf_counter() - started
            sampler.stop.set()
            sampler.join()
        busy_after, total_after = _cpu_ticks()
        if server.model.errors:
            print(f"  model server: {server.model.errors[:3]}", file=sys.stderr)
    succeeded = 0
    summary = out / "summary.json"
    if summary.exists():
        succeeded = json.loads(summary.read_text())["totals"]["success"]
    if code != 0 or succeeded != args.tasks:
        print(f"  warning: exit {code}, {succeeded}/{args.tasks} succeeded; see {log}")
    cpu = sum(sampler.cpu.values())
    return Run(
        jobs=jobs,
        busy=(busy_after - busy_before) / max(1, total_after - total_before),
        at_peak=sampler.at_peak,
        wall=wall,
        cpu=cpu,
        peak_rss_mib=sampler.peak_rss / 2**20,
        peak_pss_mib=sampler.peak_pss / 2**20,
        peak_processes=sampler.peak_processes,
        succeeded=succeeded,
        code=code,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--turns", type=int, default=6, help="model turns per task (>= 1)")
    parser.add_argument("--delay", type=float, default=0.2, help="model latency, seconds")
    parser.add_argument("--jobs", default="1,4,8", help="comma-separated --jobs values")
    parser.add_argument(
        "--sandbox",
        default="workspace-write",
        choices=["read-only", "workspace-write", "danger-full-access"],
    )
    parser.add_argument("--interpreter", help="the `interpreter` to measure")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()
    if args.turns < 1 or args.tasks < 1:
        parser.error("--tasks and --turns must be at least 1")
    jobs_list = [int(j) for j in args.jobs.split(",")]

    argv = interpreter_argv(args.interpreter)
    floor = args.tasks * args.turns * args.delay
    print(
        f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}; "
        f"{args.tasks} tasks x {args.turns} turns, model latency {args.delay * 1000:.0f} ms, "
        f"sandbox {args.sandbox}"
    )
    print(f"measuring: {' '.join(argv)} batch ... ({' '.join(map(str, jobs_list))} jobs)")
    print(f"model latency alone, one task at a time: {floor:.1f} s")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    base = Path(tempfile.mkdtemp(prefix="oiexec-bench-batch-"))
    runs: list[Run] = []
    try:
        repo = make_repo(base)
        for jobs in jobs_list:
            runs.append(run_batch(argv, base, repo, jobs, args))
            r = runs[-1]
            print(
                f"  --jobs {r.jobs:<3} wall {r.wall:6.1f} s   cpu {r.cpu:6.1f} s   "
                f"peak RSS {r.peak_rss_mib:6.0f} MiB (PSS {r.peak_pss_mib:5.0f} MiB)   "
                f"{r.peak_processes:3d} processes   cores {r.busy:4.0%} busy   "
                f"{r.succeeded}/{args.tasks} ok",
                flush=True,
            )
    finally:
        if args.keep:
            print(f"work directory kept: {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)
    report(runs)


def report(runs: list[Run]) -> None:
    one = next((r for r in runs if r.jobs == 1), None)
    print()
    print(
        f"{'jobs':>4}  {'wall s':>7}  {'speed-up':>8}  {'cpu s':>6}  {'RSS MiB':>8}  {'PSS MiB':>8}"
    )
    for r in runs:
        speedup = f"{one.wall / r.wall:7.1f}x" if one else "       -"
        print(
            f"{r.jobs:>4}  {r.wall:7.1f}  {speedup:>8}  {r.cpu:6.1f}  "
            f"{r.peak_rss_mib:8.0f}  {r.peak_pss_mib:8.0f}"
        )
    for r in runs:
        parts = sorted(r.at_peak.items(), key=lambda kv: -kv[1][1])
        print(
            f"  at the RSS peak, {r.jobs} jobs: "
            + ", ".join(f"{n} x {kind} {mib:.0f} MiB" for kind, (n, mib) in parts)
        )
    eight = next((r for r in runs if r.jobs == 8), None)
    if one and eight:
        speedup = one.wall / eight.wall
        verdict = (
            "met" if speedup >= SPEEDUP_TARGET else f"missed by {SPEEDUP_TARGET - speedup:.1f}x"
        )
        print(
            f"target: 8 jobs >= {SPEEDUP_TARGET:.0f}x faster than 1 job: {speedup:.1f}x ({verdict})"
        )
    if eight:
        rss = eight.peak_rss_mib
        verdict = "met" if rss < RSS_TARGET_MIB else f"missed by {rss - RSS_TARGET_MIB:.0f} MiB"
        print(
            f"target: peak RSS at 8 jobs < {RSS_TARGET_MIB} MiB (8 x 60): {rss:.0f} MiB ({verdict})"
        )
        each = eight.peak_pss_mib / eight.jobs
        verdict = "met" if each <= RSS_TARGET_MIB / 8 else f"missed by {each - 60:.0f} MiB"
        print(
            f"target: memory per task at 8 jobs (peak PSS of the tree / 8) <= 60 MiB: "
            f"{each:.0f} MiB ({verdict})"
        )


if __name__ == "__main__":
    main()
