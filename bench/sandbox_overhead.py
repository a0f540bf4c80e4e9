"""Per-command overhead of each sandbox backend against a plain spawn.

    python bench/sandbox_overhead.py [--runs 200]

Median wall time of running `/bin/true` (workspace-write, network off). Targets: bwrap
<= 15 ms, Landlock <= 5 ms.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def _median(runs: int, make: object) -> float:
    assert callable(make)
    return statistics.median(_spawn(make()) for _ in range(runs))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as ws:
        subprocess.run(["git", "init", "-q", ws], check=True)
        policy = SandboxPolicy(mode="workspace-write", cwd=Path(ws))
        env = dict(os.environ)
        rows: list[tuple[str, float, str]] = []
        plain = _median(runs, lambda: PreparedCommand(["/bin/true"], env, Path(ws)))
        rows.append(("plain spawn", plain, ""))
        for backend, target in (("bwrap", 15.0), ("landlock", 5.0)):
            clear_cache()
            # Chosen as users choose it; "any" so a root runner measures Landlock too.
            chosen = dataclasses.replace(policy, backend=backend, require="any")
            sandbox = get_sandbox(chosen)
            if sandbox.backend != backend:
                sandbox.close()
                rows.append((backend, float("nan"), f"unavailable ({sandbox.backend})"))
                continue
            try:
                value = _median(
                    runs, lambda s=sandbox: s.prepare(["/bin/true"], cwd=Path(ws), env=env)
                )
            finally:
                sandbox.close()  # removes the sandbox's private /tmp
            verdict = "ok" if value - plain <= target else "OVER TARGET"
            rows.append(
                (backend, value, f"+{value - plain:.1f} ms (target <= {target:.0f}) {verdict}")
            )
    for name, value, note in rows:
        print(f"{name:12} median {value:6.2f} ms  {note}")


if __name__ == "__main__":
    main()
