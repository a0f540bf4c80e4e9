"""Through the real CLI: numbers that are not numbers, arguments that are not UTF-8 and
configs that are too deep or too big end with their documented exit code and a message, in
bounded time, never a traceback. (The mechanisms are tested in-process in
tests/config/test_number_keys.py and test_parsing_bounds.py.)"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.conftest import exec_args, run_cli
from tests.support.model_server import ModelServer, reply

#: Seconds a refused run may take: the interpreter's start and the config load (well under a
#: second each on an idle machine), times a loaded 2-core CI machine.
_BOUND_S = 10.0
#: A whole run (git, sandbox, the scripted model) with the big config.
_RUN_BOUND_S = 20.0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--timeout", "inf", "go"],
            "Invalid value for '--timeout': 'inf': expected a finite number of seconds > 0",
        ),
        (["--max-cost", "nan", "go"], "Invalid value for '--max-cost': 'nan'"),
        (["--max-turns", "-1", "go"], "expected a whole number >= 1"),
        (["-m", "gpt-5", "fix \udcff"], "argument 4 is not valid UTF-8: `fix \\xff`"),
    ],
    ids=["timeout-inf", "max-cost-nan", "max-turns-negative", "prompt-not-utf8"],
)
def test_usage_errors_before_anything_runs(repo: Path, args: list[str], message: str) -> None:
    start = time.monotonic()
    result = run_cli(["exec", *args], cwd=repo, timeout=_BOUND_S * 3)
    assert time.monotonic() - start < _BOUND_S
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr


def test_a_config_nested_too_deep_is_exit_3_naming_the_file(repo: Path, oi_home: Path) -> None:
    (oi_home / "config.toml").write_text('model = "m"\nx = ' + "[" * 10_000 + "]" * 10_000)
    start = time.monotonic()
    result = run_cli(["exec", "-c", "check_timeout=nan", "go"], cwd=repo, timeout=_BOUND_S * 3)
    assert time.monotonic() - start < _BOUND_S
    assert result.returncode == 3, result.stderr
    assert f"invalid TOML in {oi_home / 'config.toml'}: line 2: nested more than 64" in (
        result.stderr
    )
    assert "Traceback" not in result.stderr


def test_twenty_thousand_unknown_keys_run_with_a_short_report(
    model_server: ModelServer, repo: Path, oi_home: Path
) -> None:
    (oi_home / "config.toml").write_text("".join(f"unknown_{i} = {i}\n" for i in range(20_000)))
    model_server.enqueue(reply("done"))
    start = time.monotonic()
    result = run_cli([*exec_args(model_server), "go"], cwd=repo, timeout=_RUN_BOUND_S * 3)
    assert time.monotonic() - start < _RUN_BOUND_S
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stderr.count("ignoring unknown config key") == 20
    assert "ignoring 19980 more unknown config keys" in result.stderr
    assert len(result.items("error")) <= 21
