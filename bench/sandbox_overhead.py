"""Per-command overhead of each sandbox backend against a plain spawn.

    python bench/sandbox_overhead.py [--runs 200] [--breakdown] [--rss MIB]

Median wall time of running `/bin/true` (workspace-write, network off), over a plain spawn
of it; plain and sandboxed spawns alternate, so both see the same load. A sandboxed spawn is
started as the runner starts commands: tied to the runner (`oiexec.tools.spawn.tie`), the
plain one is a bare spawn. Targets (issue 25): bwrap <= +9 ms, Landlock <= +4 ms.
`--breakdown` adds where a backend's time goes: a spawn with any Python `preexec_fn` (a fork
of the runner, where a plain spawn can vfork), a plain spawn tied to the runner (what an
unsandboxed command costs), the backend's prepare, spawn and after steps, and the CPU time
of a command (runner and children; steadier than wall time on a shared machine). `--rss` first
grows this process to about that resident size, as a runner's: a fork copies its page
tables, a vfork does not.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from oiexec.core.policy import PreparedCommand, SandboxPolicy
from oiexec.sandbox import get_sandbox
from oiexec.sandbox.preflight import clear_cache
from oiexec.tools import spawn

if hasattr(spawn, "tie"):
    tie = spawn.tie
else:  # code from before the tie (A/B runs): the parent-death signal in a preexec_fn

    def tie(
        argv: list[str], preexec: Callable[[], object] | None, **_: object
    ) -> tuple[list[str], Callable[[], object] | None]:
        return argv, spawn.tied_to_runner(preexec)


RUSAGE_KIDS = resource.RUSAGE_CHILDREN


def _run(prepared: PreparedCommand, *, tied: bool = True) -> None:
    """`prepared` started as the runner starts a command (tied to it), or bare."""
    argv: list[str] = prepared.argv
    preexec: Callable[[], object] | None = prepared.preexec_fn
    if tied:
        argv, preexec = tie(argv, preexec, env=prepared.env, cwd=prepared.cwd)
    subprocess.run(
        argv, cwd=prepared.cwd, env=prepared.env, pass_fds=prepared.pass_fds,
        preexec_fn=preexec, check=True,
    )  # fmt: skip


def _spawn(prepared: PreparedCommand, *, tied: bool = True) -> float:
    start = time.perf_counter()
    _run(prepared, tied=tied)
    prepared.after()
    return (time.perf_counter() - start) * 1000


def _grow(mib: int) -> list[bytearray]:
    """Touched ballast up to about `mib` MiB resident (nothing when already that large)."""
    with open("/proc/self/statm") as f:
        resident = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    chunks = [bytearray(1 << 20) for _ in range(max(mib - resident // (1 << 20), 0))]
    for chunk in chunks:
        chunk[:: os.sysconf("SC_PAGE_SIZE")] = b"\1" * len(chunk[:: os.sysconf("SC_PAGE_SIZE")])
    return chunks


#: Milliseconds over a plain spawn (issue 25).
_TARGETS: tuple[tuple[Literal["bwrap", "landlock"], float], ...] = (
    ("bwrap", 9.0),
    ("landlock", 4.0),
)


def _paired(
    runs: int, make: Callable[[], PreparedCommand], plain: Callable[[], PreparedCommand]
) -> tuple[float, float]:
    """Medians of `runs` spawns of `make()` and of as many plain spawns, taken in turn: on a
    shared machine the load drifts, and both then see the same drift."""
    timed: list[float] = []
    base: list[float] = []
    for _ in range(runs):
        base.append(_spawn(plain(), tied=False))
        timed.append(_spawn(make()))
    return statistics.median(timed), statistics.median(base)


def _median_ms(runs: int, step: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        step()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _cpu_ms(runs: int, make: Callable[[], PreparedCommand], *, tied: bool = True) -> float:
    """Mean CPU time per command of this process and its children (prepare, spawn, after):
    on a shared machine steadier than wall time, which mostly measures waiting for a core."""

    def used() -> float:
        me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(RUSAGE_KIDS)
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

    start = used()
    for _ in range(runs):
        _spawn(make(), tied=tied)
    return (used() - start) * 1000 / runs


def _steps(runs: int, make: Callable[[], PreparedCommand]) -> str:
    """Medians of one backend's three steps: prepare, the spawn itself, after."""
    prepared: list[PreparedCommand] = []
    prepare = _median_ms(runs, lambda: prepared.append(make()))
    pending = list(prepared)

    spawned = _median_ms(runs, lambda: _run(pending.pop()))
    after = _median_ms(runs, lambda: prepared.pop().after())
    cpu = _cpu_ms(runs, make)
    steps = f"prepare {prepare:.2f} ms, spawn {spawned:.2f} ms, after {after:.2f} ms"
    return f"{steps}, cpu {cpu:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--breakdown", action="store_true", help="where the time goes")
    parser.add_argument("--rss", type=int, default=0, metavar="MIB", help="grow to this RSS")
    args = parser.parse_args()
    ballast = _grow(args.rss)
    runs = args.runs
    notes: list[str] = []
    with tempfile.TemporaryDirectory() as ws:
        subprocess.run(["git", "init", "-q", ws], check=True)
        policy = SandboxPolicy(mode="workspace-write", cwd=Path(ws))
        env = dict(os.environ)
        rows: list[tuple[str, float, str]] = []
        plains: list[float] = []
        for backend, target in _TARGETS:
            clear_cache()
            # Chosen as users choose it; "any" so a root runner measures Landlock too.
            chosen = dataclasses.replace(policy, backend=backend, require="any")
            sandbox = get_sandbox(chosen)
            if sandbox.backend != backend:
                sandbox.close()
                rows.append((backend, float("nan"), f"unavailable ({sandbox.backend})"))
                continue
            try:
                value, plain = _paired(
                    runs,
                    functools.partial(sandbox.prepare, ["/bin/true"], cwd=Path(ws), env=env),
                    functools.partial(PreparedCommand, ["/bin/true"], env, Path(ws)),
                )
                if args.breakdown:
                    make = functools.partial(sandbox.prepare, ["/bin/true"], cwd=Path(ws), env=env)
                    notes.append(f"  {backend}: {_steps(runs, make)}")
            finally:
                sandbox.close()  # removes the sandbox's private /tmp
            plains.append(plain)
            verdict = "ok" if value - plain <= target else "OVER TARGET"
            rows.append(
                (backend, value, f"+{value - plain:.1f} ms (target <= {target:.0f}) {verdict}")
            )
        if plains:
            rows.insert(0, ("plain spawn", statistics.median(plains), ""))
        if args.breakdown:
            fork = _median_ms(
                runs, lambda: subprocess.run(["/bin/true"], preexec_fn=lambda: None, check=True)
            )
            make_plain = functools.partial(PreparedCommand, ["/bin/true"], env, Path(ws))
            tied = _median_ms(runs, lambda: _run(make_plain()))
            plain_cpu = _cpu_ms(runs, make_plain, tied=False)
            tied_cpu = _cpu_ms(runs, make_plain)
            notes[:0] = [
                f"  a spawn with a no-op preexec_fn (a fork): {fork:.2f} ms",
                f"  a plain spawn tied to the runner: {tied:.2f} ms",
                f"  cpu per command: plain {plain_cpu:.2f} ms, tied {tied_cpu:.2f} ms",
            ]
    for name, value, note in rows:
        print(f"{name:12} median {value:6.2f} ms  {note}")
    for line in notes:
        print(line)
    del ballast


if __name__ == "__main__":
    main()
