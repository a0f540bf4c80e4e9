"""`[sandbox_workspace_write] allowed_domains`: a known key, checked entry by entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from oiexec.core.errors import ConfigError
from oiexec.core.policy import SandboxPolicy, loosenings
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


def _policy(**fields: object) -> SandboxPolicy:
    base: dict[str, object] = {
        "mode": "workspace-write",
        "cwd": Path("/w"),
        "network_access": True,
        "exclude_tmpdir_env_var": True,
    }
    return SandboxPolicy(**{**base, **fields})  # type: ignore[arg-type]


def test_the_allowlist_applies_with_the_network_on_in_workspace_write_only() -> None:
    assert _policy(allowed_domains=("pypi.org",)).network_allowlist
    assert not _policy(allowed_domains=("pypi.org",), network_access=False).network_allowlist
    assert not _policy(allowed_domains=("pypi.org",), mode="read-only").network_allowlist
    assert not _policy().network_allowlist
    summary = _policy(allowed_domains=("pypi.org", "*.npmjs.org")).summary()
    assert summary.endswith("network: pypi.org, *.npmjs.org only")


def test_a_wider_network_than_the_ceiling_allowlist_is_a_loosening() -> None:
    ceiling = _policy(allowed_domains=("pypi.org",))
    assert loosenings(ceiling, _policy(allowed_domains=("pypi.org",))) == []
    assert loosenings(ceiling, _policy(network_access=False)) == []
    assert loosenings(ceiling, _policy()) == [
        "network access is unrestricted, and an allowlist in the ceiling"
    ]
    assert loosenings(ceiling, _policy(allowed_domains=("pypi.org", "evil.com"))) == [
        "network hosts evil.com are allowed, not in the ceiling"
    ]
