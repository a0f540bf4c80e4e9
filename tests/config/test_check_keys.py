"""The verify loop's keys (`check`, `check_max_attempts`, `check_timeout`) through the layers."""

from __future__ import annotations

from pathlib import Path

import pytest

from oiexec.core.errors import ConfigError
from tests.config.conftest import Load


def test_check_from_the_environment_and_from_a_file(load: Load, home: Path) -> None:
    loaded = load(environ={"OIEXEC_CHECK": "pytest -q", "OIEXEC_CHECK_MAX_ATTEMPTS": "5"})
    settings = loaded.settings
    assert (settings.check, settings.check_max_attempts) == ("pytest -q", 5)
    assert loaded.origins["check"] == "environment (OIEXEC_CHECK)"
    (home / "config.toml").write_text('check = "make test"\ncheck_timeout = 90\n')
    settings = load().settings
    assert (settings.check, settings.check_max_attempts, settings.check_timeout) == (
        "make test",
        3,
        90.0,
    )


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ('check="  "', "must be a shell command"),
        ("check_max_attempts=0", "expected a whole number >= 1, got the integer 0"),
        ("check_timeout=0", r"expected a finite number of seconds > 0 .*, got the integer 0"),
    ],
)
def test_bad_check_values_are_config_errors(load: Load, override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load(overrides=(override,))
