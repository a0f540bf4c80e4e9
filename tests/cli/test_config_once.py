"""A run resolves its settings once: config is loaded once and the harness chosen once, on a
new thread and on a resume alike (the session's recorded settings are one layer of that
load, not a second and third load after it), also when a model given now makes the resume
choose its harness again.

Counted in the real CLI's own process (a run keeps process-global state, so it never runs in
the test's): a wrapper script replaces two functions with counting ones, then runs the CLI.
What is counted sits inside the steps, reached through its module's globals, so however a
caller imports `load_config` or `choose_harness_id`, each call is seen: `validate_settings`
ends every `load_config`, `check_wire` ends every `choose_harness_id`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import CliResult
from tests.support.model_server import ModelServer, reply

_COUNTING_CLI = """
import atexit, json, sys
import oiexec.config.loader as loader
import oiexec.harness.select as select

counts = {"config loads": 0, "harness choices": 0}

def counting(module, name, key):
    real = getattr(module, name)
    def counted(*args, **kwargs):
        counts[key] += 1
        return real(*args, **kwargs)
    setattr(module, name, counted)

counting(loader, "validate_settings", "config loads")
counting(select, "check_wire", "harness choices")
counts_file = sys.argv[1]
atexit.register(lambda: open(counts_file, "w").write(json.dumps(counts)))
sys.argv = ["interpreter", *sys.argv[2:]]
from oiexec.cli import main
main()
"""


def _counted_run(args: list[str], cwd: Path, counts_file: Path) -> tuple[CliResult, dict[str, int]]:
    proc = subprocess.run(
        [sys.executable, "-c", _COUNTING_CLI, str(counts_file), *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=dict(os.environ),
        timeout=60,
    )
    result = CliResult(proc.returncode, proc.stdout.decode(), proc.stderr.decode())
    assert result.returncode == 0, result.stderr
    counts: dict[str, int] = json.loads(counts_file.read_text())
    return result, counts


def test_config_is_loaded_once_and_the_harness_chosen_once_per_run(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    model_server.enqueue(reply("started"), reply("resumed"), reply("on another model"))
    base = ["exec", "--json", "-s", "read-only", *model_server.config_args()]
    once = {"config loads": 1, "harness choices": 1}

    started, counts = _counted_run([*base, "start"], repo, tmp_path / "exec.json")
    assert counts == once
    thread_id = started.events[0]["thread_id"]

    resumed, counts = _counted_run([*base, "resume", thread_id, "go on"], repo, tmp_path / "r.json")
    assert resumed.events[0]["thread_id"] == thread_id
    assert "resume:" not in resumed.stderr  # the session's settings, restored as they were
    assert counts == once

    # A model given now: the session's harness was made for its model, so it is chosen again,
    # still within the one load.
    switched, counts = _counted_run(
        [*base, "-m", "claude-sonnet-4", "resume", thread_id, "again"], repo, tmp_path / "m.json"
    )
    assert "resume: model gpt-5.5 -> claude-sonnet-4 (from -m)" in switched.stderr
    assert "resume: harness native -> claude-code" in switched.stderr
    assert counts == once
