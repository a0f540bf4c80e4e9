"""What a turn costs through the Python API, beside the same turn through the CLI.

    python bench/api.py [--turns 10]

Each turn is one scripted model answer with one command (`echo`), against the scripted model
server on 127.0.0.1 with zero latency, in a temporary git repository, so what is measured is
the runner and how a turn is started: the API forks each turn from a preloaded zygote (the
first turn pays for starting it), the CLI starts a fresh interpreter per turn. Also: the time
`import oiexec` takes (the API must not make `interpreter --version` slower).
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
sys.path.insert(0, str(ROOT))

from tests.support.model_server import call, reply, running_model_server  # noqa: E402


def _repo(base: Path) -> Path:
    repo = base / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "README").write_text("bench\n")
    git = ["git", "-C", str(repo), "-c", "user.name=b", "-c", "user.email=b@b"]
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    return repo


def _overrides(args: list[str]) -> dict[str, object]:
    pairs = (args[i + 1].split("=", 1) for i in range(0, len(args), 2))
    return {key: json.loads(value) for key, value in pairs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10)
    turns = parser.parse_args().turns
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        os.environ["OPENINTERPRETER_HOME"] = str(base / "home")
        repo = _repo(base)
        steps = [
            step
            for _ in range(2 * turns)
            for step in (reply(tool_calls=[call("exec_command", {"cmd": "echo hi"})]), reply("ok"))
        ]
        with running_model_server(*steps) as server:
            started = time.perf_counter()
            import oiexec

            agent = oiexec.Agent(cwd=str(repo), config=_overrides(server.config_args()))
            imported = time.perf_counter() - started
            api: list[float] = []
            for _ in range(turns):
                began = time.perf_counter()
                turn = agent.start_thread().run("go")
                api.append(time.perf_counter() - began)
                assert turn.ok, turn.reason
            cli: list[float] = []
            for _ in range(turns):
                began = time.perf_counter()
                subprocess.run(
                    [sys.executable, "-m", "oiexec", "exec", *server.config_args(), "go"],
                    cwd=repo,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    check=True,
                )
                cli.append(time.perf_counter() - began)
    print(f"loading the API + Agent():  {imported * 1000:.1f} ms")
    print(f"API, first turn:             {api[0]:.2f} s (starts the zygote)")
    print(f"API, later turns (median):   {statistics.median(api[1:]):.2f} s")
    print(f"CLI subprocess (median):     {statistics.median(cli):.2f} s")


if __name__ == "__main__":
    main()
