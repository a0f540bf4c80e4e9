"""The fault table: each provider fault on each wire, through the real CLI, against the
scripted model server on 127.0.0.1.

    python bench/fault_table.py [--wire responses|chat|messages] [--fault TEXT] [--runs N]

Every run has a 400 ms `stream_idle_timeout_ms` and one retry of each kind (the faults are
defined once, in tests/support/fault_catalog.py, which the fault-matrix tests use too). A
row passes when the run ends with the expected exit code, its message names the cause, the
key leaks nowhere, there is no traceback, and it ends in time. Time is counted from the
run's first model request to its exit (`after 1st req`), which leaves out the runner's
start-up (`total` shows it; a loaded machine stretches it most). The limit is twice that
time for a clean run (measured first, the slowest of `--runs`), plus 1.5 times what the
fault itself may cost (`stream_idle_timeout_ms x (stream_max_retries + 1)` for an idle
fault), plus 0.5 s. The exit status is 1 if any row fails.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.fault_catalog import (  # noqa: E402
    RECOVERED,
    WIRES,
    FaultCase,
    FaultRun,
    catalog,
    key_leaks,
    run_fault,
)
from tests.support.model_server import ModelServer, Wire, reply, running_model_server  # noqa: E402


def isolate(scratch: Path) -> tuple[Path, Path]:
    """A home and a git repository of their own, and fast retry waits, as the tests have."""
    home = scratch / "home"
    repo = scratch / "repo"
    home.mkdir()
    repo.mkdir()
    for name in list(os.environ):
        if name.endswith("_API_KEY") or name.startswith(("OPENAI_", "ANTHROPIC_", "CODEX_")):
            del os.environ[name]
    os.environ.update(
        HOME=str(home),
        OPENINTERPRETER_HOME=str(home / ".openinterpreter"),
        OIEXEC_RETRY_BASE_DELAY_MS="1",
        PYTHONDONTWRITEBYTECODE="1",
        GIT_CONFIG_NOSYSTEM="1",
    )
    os.environ.pop("GITHUB_ACTIONS", None)
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "initial"]):
        subprocess.run(
            ["git", "-c", "user.name=Bench", "-c", "user.email=bench@example.invalid", *args],
            cwd=repo,
            check=True,
            capture_output=True,
        )
    return home, repo


def verdict(case: FaultCase, wire: Wire, run: FaultRun, limit: float, leaks: list[str]) -> str:
    """'pass', or what went wrong."""
    wrong = []
    if run.result.returncode != case.exit_code:
        wrong.append(f"exit {run.result.returncode}")
    if run.fault_seconds > limit:
        wrong.append("too slow")
    if not run.says(case.says(wire)):
        wrong.append("cause not named")
    if case.exit_code == 0 and run.messages != [RECOVERED]:
        wrong.append(f"answer {run.messages}")
    if leaks:
        wrong.append("key leaked")
    if "Traceback" in run.result.stderr or "internal error" in run.result.stderr:
        wrong.append("internal error")
    return "pass" if not wrong else "FAIL: " + ", ".join(wrong)


def clean_run_seconds(server: ModelServer, repo: Path, wire: Wire, runs: int) -> float:
    times = []
    for _ in range(runs):
        run = run_fault(server, repo, wire, reply(RECOVERED))
        if run.result.returncode != 0:
            raise SystemExit(f"a clean run on {wire} failed:\n{run.result.stderr}")
        times.append(run.fault_seconds)
    return max(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--wire", choices=WIRES, action="append", help="only this wire")
    parser.add_argument("--fault", help="only faults whose name contains this text")
    parser.add_argument("--runs", type=int, default=2, help="clean runs timed per wire")
    args = parser.parse_args(argv)
    wires: list[Wire] = args.wire or list(WIRES)
    cases = [c for c in catalog() if not args.fault or args.fault.lower() in c.name.lower()]
    failures = rows = 0
    with tempfile.TemporaryDirectory(prefix="fault-table-") as scratch:
        home, repo = isolate(Path(scratch))
        with running_model_server() as server:
            clean = {wire: clean_run_seconds(server, repo, wire, args.runs) for wire in wires}
            shown = ", ".join(f"{w} {s:.2f}s" for w, s in clean.items())
            print(f"clean run, from the 1st model request to the exit: {shown}")
            print(
                f"{'fault':<42} {'wire':<10} {'exit (want)':>11} {'total':>6} "
                f"{'after 1st req':>13} {'limit':>6}  result"
            )
            for case in cases:
                for wire in wires:
                    if not case.applies(wire):
                        continue
                    server.clear()
                    limit = 2 * clean[wire] + 1.5 * case.bound + 0.5
                    run = run_fault(server, repo, wire, *case.steps(wire), timeout=120)
                    result = verdict(case, wire, run, limit, key_leaks(run, home, repo))
                    rows += 1
                    failures += result != "pass"
                    code = f"{run.result.returncode} ({case.exit_code})"
                    print(
                        f"{case.name:<42} {wire:<10} {code:>11} {run.seconds:>6.2f} "
                        f"{run.fault_seconds:>13.2f} {limit:>6.2f}  {result}",
                        flush=True,
                    )
    print(f"{rows - failures}/{rows} pass")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
