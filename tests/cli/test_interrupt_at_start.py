"""A Ctrl-C while the CLI is still being imported (the first few hundred milliseconds, the
window a batch's early stop signal also hits) ends the command like any interrupt: one line,
exit 130, no Python traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

RUNNER_PYTHON = sys.executable

# Imported by Python at start-up (from PYTHONPATH): it holds the import of `click`, which the
# CLI needs, until the test has sent its signal, so the signal lands inside the CLI's import.
_SITECUSTOMIZE = """
import importlib.abc, os, sys, time

class _Hold(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "click":
            open(os.environ["HOLD_MARKER"], "w").close()
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                time.sleep(0.01)
        return None

sys.meta_path.insert(0, _Hold())
"""


def test_sigint_while_the_cli_is_imported_exits_130_without_a_traceback(tmp_path: Path) -> None:
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    marker = tmp_path / "importing"
    env = {**os.environ, "PYTHONPATH": str(hook), "HOLD_MARKER": str(marker)}
    proc = subprocess.Popen(
        [RUNNER_PYTHON, "-m", "oiexec", "exec", "hello"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not marker.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the CLI never reached the import of click"
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert err.strip() == "interrupted by SIGINT"
    assert out == ""
