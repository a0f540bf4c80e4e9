"""What a hostile or generated config costs the loader: wall and CPU time of one load.

    python bench/config_bounds.py [--keys 20000] [--depth 10000]

Each case writes `$home/config.toml` and times `load_config` plus the no-effect notes a run
prints (what `interpreter exec` does with a config before the model is asked); a case that
is refused is timed to its config error. CPU time is given beside wall time because a loaded
machine inflates wall time alone. Target: every case under a second.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from oiexec.config.effects import RunFacts, no_effect_notes
from oiexec.config.loader import ConfigInputs, load_config
from oiexec.core.errors import ConfigError


def cases(keys: int, depth: int) -> dict[str, str]:
    return {
        f"{keys} unknown top-level keys": "".join(f"unknown_{i} = {i}\n" for i in range(keys)),
        f"{keys} unknown [features]": "[features]\n"
        + "".join(f"f{i} = true\n" for i in range(keys)),
        f"{keys} keys Codex knows ([desktop])": "[desktop]\n"
        + "".join(f"k{i} = 1\n" for i in range(keys)),
        f"{keys} wrong values": "[features]\n" + "".join(f'f{i} = "yes"\n' for i in range(keys)),
        f"arrays {depth} deep": "x = " + "[" * depth + "]" * depth,
        f"inline tables {depth} deep": "x = " + "{a = " * depth + "1" + "}" * depth,
        f"dotted key of {depth} parts": ".".join(["a"] * depth) + " = 1",
        f"table header of {depth} parts": "[" + ".".join(["a"] * depth) + "]\nb = 1",
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", type=int, default=20_000)
    parser.add_argument("--depth", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home, project = Path(tmp, "home"), Path(tmp, "project")
        home.mkdir()
        (project / ".git").mkdir(parents=True)
        for name, text in cases(args.keys, args.depth).items():
            (home / "config.toml").write_text(text)
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                loaded = load_config(ConfigInputs(cwd=project), home=home, environ={})
                notes = no_effect_notes(
                    loaded.settings, loaded.layers, loaded.ignored, RunFacts(), strict=False
                )
                outcome = f"loaded, {len(loaded.warnings)} warnings, {len(notes)} notes"
            except ConfigError as exc:
                outcome = "config error: " + exc.message.splitlines()[0][-60:]
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            print(f"{name:40} {wall:6.3f} s wall {cpu:6.3f} s CPU  {outcome}")


if __name__ == "__main__":
    main()
