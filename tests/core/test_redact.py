"""Secrets are masked in what the runner writes, including simple disguises."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from oiexec.core.redact import clear_secrets, looks_secret, redact, register_secret


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    clear_secrets()
    yield
    clear_secrets()


def test_literal_reversed_and_hex_forms_are_masked() -> None:
    key = "sk-live-0123456789abcdef"
    register_secret(key)
    text = f"a {key} b {key[::-1]} c {key.encode().hex()} d {key.encode().hex().upper()}"
    masked = redact(text)
    for form in (key, key[::-1], key.encode().hex(), key.encode().hex().upper()):
        assert form not in masked
    assert masked.count("[REDACTED]") == 4


def test_short_values_are_not_registered() -> None:
    register_secret("abc")
    assert redact("abc cba") == "abc cba"


@pytest.mark.parametrize(
    ("name", "expected"),
    [("OPENAI_API_KEY", True), ("gh_token", True), ("DB_PASSWORD", True), ("PATH", False)],
)
def test_secret_looking_names(name: str, expected: bool) -> None:
    assert looks_secret(name) is expected


def test_provider_key_variable_counts_whatever_its_name() -> None:
    assert looks_secret("PROVIDER_CRED", "provider_cred")
    assert not looks_secret("PROVIDER_CRED")
