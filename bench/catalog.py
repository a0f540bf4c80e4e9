"""What the model catalog costs a process: time and memory of finding a model's window and price.

    python bench/catalog.py [--runs 7] [--model gpt-5.5] [--provider openai]

Each measurement is a fresh interpreter that first imports what `interpreter exec` has imported
by the time it asks (the runner, the config loader, the providers), then times
`oiexec.catalog.facts.model_facts` alone and reads its own peak RSS before and after
(`ru_maxrss`), so the figures are what the catalog adds to a run, not Python's start-up:

- cold: an empty memo, so the models.dev snapshot and genai-prices are imported and read;
- warm: the memo in $OPENINTERPRETER_HOME/cache already has the answer (every run after the
  first with that model, installed catalog data and day);
- config: `model_context_window` and `[model_pricing]` given, so the catalog is not asked;
- `models list`: the whole command as a user runs it (wall time of the process).

Medians of --runs runs. Target: warm under 5 ms and 1 MiB (a batch of many tasks on one
model pays the cold figure once).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_PROBE = """
import json, resource, sys, time
import oiexec.runner.exec, oiexec.config.loader, oiexec.providers
from oiexec.catalog.facts import model_facts
from oiexec.config.settings import Settings
settings = Settings(model=sys.argv[1], **json.loads(sys.argv[3]))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
facts = model_facts(settings, sys.argv[2])
elapsed = time.perf_counter() - started
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"ms": elapsed * 1000, "mib": (after - before) / 1024,
                  "window": facts.context_window, "found": facts.price is not None}))
"""


def probe(home: Path, model: str, provider: str, config: dict[str, object]) -> dict[str, float]:
    env = {**os.environ, "OPENINTERPRETER_HOME": str(home), "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, model, provider, json.dumps(config)],
        env=env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return dict(json.loads(out))


def list_wall(home: Path) -> float:
    env = {**os.environ, "OPENINTERPRETER_HOME": str(home), "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "oiexec", "models", "list", "--json"],
        env=env, stdout=subprocess.DEVNULL, check=True,
    )  # fmt: skip
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--model", default="gpt-5.5")
    parser.add_argument("--provider", default="openai")
    args = parser.parse_args()
    config = {
        "model_context_window": 200_000,
        "model_pricing": {"input_per_mtok": 1, "output_per_mtok": 2},
    }
    results: dict[str, list[dict[str, float]]] = {"cold": [], "warm": [], "config": []}
    walls = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp)
            results["cold"].append(probe(home, args.model, args.provider, {}))
            results["warm"].append(probe(home, args.model, args.provider, {}))
            results["config"].append(probe(home, args.model, args.provider, config))
            walls.append(list_wall(home))
    sample = results["cold"][0]
    print(
        f"model_facts({args.model!r} at {args.provider!r}): window {sample['window']}, "
        f"price {'found' if sample['found'] else 'unknown'}; medians of {args.runs} runs"
    )
    for name, rows in results.items():
        ms = statistics.median(r["ms"] for r in rows)
        mib = statistics.median(r["mib"] for r in rows)
        print(f"  {name:<7} {ms:8.1f} ms  {mib:6.1f} MiB added to peak RSS")
    print(f"  `interpreter models list --json`: {statistics.median(walls):.0f} ms wall")
    warm = results["warm"]
    ok = (
        statistics.median(r["ms"] for r in warm) < 5
        and statistics.median(r["mib"] for r in warm) < 1
    )
    print(f"  target: warm < 5 ms and < 1 MiB: {'met' if ok else 'missed'}")


if __name__ == "__main__":
    main()
