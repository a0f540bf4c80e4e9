"""Per-command overhead of each sandbox backend against a plain spawn.

    python bench/sandbox_overhead.py [--runs 200]

Median wall time of running `/bin/true` (workspace-write, network off), over a plain spawn
of it; plain and sandboxed spawns alternate, so both see the same load. Targets (issue 25):
bwrap <= +9 ms, Landlock <= +4 ms.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import os
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


def _spawn(prepared: PreparedCommand) -> float:
    start = time.perf_counter()
    subprocess.run(
        prepared.argv,
        cwd=prepared.cwd,
        env=prepared.env,
        pass_fds=prepared.pass_fds,
        preexec_fn=prepared.preexec_fn,
        check=True,
    )
    prepared.after()
    return (time.perf_counter() - start) * 1000


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
        base.append(_spawn(plain()))
        timed.append(_spawn(make()))
    return statistics.median(timed), statistics.median(base)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    runs = parser.parse_args().runs
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
            finally:
                sandbox.close()  # removes the sandbox's private /tmp
            plains.append(plain)
            verdict = "ok" if value - plain <= target else "OVER TARGET"
            rows.append(
                (backend, value, f"+{value - plain:.1f} ms (target <= {target:.0f}) {verdict}")
            )
        if plains:
            rows.insert(0, ("plain spawn", statistics.median(plains), ""))
    for name, value, note in rows:
        print(f"{name:12} median {value:6.2f} ms  {note}")


if __name__ == "__main__":
    main()
