"""`[sandbox_workspace_write] allowed_domains`: a known key, checked entry by entry."""

from __future__ import annotations

import pytest

from oiexec.core.errors import ConfigError
from tests.config.conftest import Load


def test_a_bad_pattern_is_a_config_error_naming_the_key(load: Load) -> None:
    with pytest.raises(ConfigError) as caught:
        load(overrides=('sandbox_workspace_write.allowed_domains=["pypi.org", "*"]',))
    assert "sandbox_workspace_write.allowed_domains" in caught.value.message
    assert "`*` may only start an entry" in caught.value.message


def test_patterns_load_into_the_policy(load: Load) -> None:
    loaded = load(
        overrides=('sandbox_workspace_write.allowed_domains=["pypi.org", "*.npmjs.org"]',)
    )
    assert loaded.settings.sandbox_workspace_write.allowed_domains == ["pypi.org", "*.npmjs.org"]
