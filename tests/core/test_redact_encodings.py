"""The encodings of a registered secret are masked wherever it sits in a longer encoded
stream, and every cut of text to a length redacts first: no fragment of a secret survives
any cut point."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oiexec.core.redact import MASK, clear_secrets, redact, redact_value, register_secret
from oiexec.core.tokens import truncate_middle
from oiexec.extensions.hooks import HookRun, log_fields
from oiexec.output.junit import _tail, case_name
from oiexec.providers.answers import server_error_message
from oiexec.providers.http import StreamInterrupted, json_event
from oiexec.tools.truncate import cut_middle


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    clear_secrets()
    yield
    clear_secrets()


# Secrets are upper-case letters and digits; the text around them never holds four such
# characters in a row, so any four-character run of the secret in an output is a leak.
_SECRETS = st.text(alphabet="ABCDEFGHJKLMNPQRSTUVWXYZ0123456789", min_size=6, max_size=48)
_FILLER = st.text(alphabet="abc xyz.,;\n", max_size=700)
_FRAGMENT = 4
_NOT_HEX = st.binary(max_size=9).filter(lambda b: not set(b) & set(b"0123456789abcdef"))


def _leaked(secret: str, text: str) -> bool:
    # The mask is no leak: the secret `EDAC00` shares `EDAC` with `[REDACTED]`.
    text = text.replace(MASK, " ")
    return any(secret[i : i + _FRAGMENT] in text for i in range(len(secret) - _FRAGMENT + 1))


@settings(max_examples=150, deadline=None)
@given(
    secret=st.binary(min_size=6, max_size=40).map(lambda b: b.hex()[:40]),
    # Neighbours never hold the secret's own characters (hex digits): `0` bytes around the
    # secret `000000000000` encode exactly as the secret does, so what is left of them beside
    # the mask looked like a leak while it only encodes the neighbours.
    before=_NOT_HEX,
    after=_NOT_HEX,
    urlsafe=st.booleans(),
    padded=st.booleans(),
)
def test_base64_at_every_alignment_is_masked(
    secret: str, before: bytes, after: bytes, urlsafe: bool, padded: bool
) -> None:
    clear_secrets()
    register_secret(secret)
    raw = secret.encode()
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    blob = encode(before + raw + after).decode()
    blob = blob if padded else blob.rstrip("=")
    masked = redact(f"data {blob} end")
    assert masked.startswith("data ") and masked.endswith(" end")
    head, mask, tail = masked[5:-4].partition(MASK)
    assert mask
    # What is left beside the mask is the blob's own start and end, and never reaches a
    # character that encodes only the secret's bytes: characters [start, end) of the blob do.
    # (Compared by position, not by content: the neighbours' encoding may by chance spell
    # three characters of the secret's, as `\x0c\x0c` after `000000000000` spells `DAw`.)
    start = -(-8 * len(before) // 6)
    end = 8 * (len(before) + len(raw)) // 6
    assert blob.startswith(head) and len(head) <= start
    assert blob.endswith(tail) and len(blob) - len(tail) >= end


@settings(max_examples=80, deadline=None)
@given(secret=_SECRETS, before=st.binary(max_size=5), upper=st.booleans())
def test_hex_inside_a_longer_hex_dump_is_masked(secret: str, before: bytes, upper: bool) -> None:
    clear_secrets()
    register_secret(secret)
    dump = (before + secret.encode() + b"\x00\xff").hex()
    masked = redact(dump.upper() if upper else dump)
    assert MASK in masked
    assert secret.encode().hex() not in masked.lower()


def _cuts() -> list[tuple[str, Callable[[str, int], str]]]:
    def error_body(text: str, _limit: int) -> str:
        return server_error_message(json.dumps({"error": {"message": text}}).encode())[0]

    def plain_body(text: str, _limit: int) -> str:
        return server_error_message(text.encode())[0]

    def garbled_event(text: str, _limit: int) -> str:
        try:
            json_event("{" + text)
        except StreamInterrupted as exc:
            return exc.reason
        raise AssertionError("not JSON, so it must be refused")

    def hook_log(text: str, _limit: int) -> str:
        handler = SimpleNamespace(event="Stop", command="true", source="user")
        run = HookRun(handler, 0, text * 4, text * 4, 0.1)  # type: ignore[arg-type]
        fields = log_fields(run)
        return f"{fields['stdout']} {fields['stderr']}"

    return [
        ("truncate_middle", lambda text, limit: truncate_middle(text, max(1, limit // 4))),
        ("cut_middle", cut_middle),
        ("junit tail", lambda text, _limit: _tail(text)),
        ("junit case name", lambda text, _limit: case_name(text)),
        ("server error (JSON)", error_body),
        ("server error (plain)", plain_body),
        ("garbled event", garbled_event),
        ("hook run log", hook_log),
    ]


@pytest.mark.parametrize(("name", "cut"), _cuts(), ids=[name for name, _ in _cuts()])
@settings(max_examples=120, deadline=None)
@given(secret=_SECRETS, head=_FILLER, tail=_FILLER, limit=st.integers(8, 600))
def test_no_cut_leaves_a_fragment_of_a_secret(
    name: str, cut: Callable[[str, int], str], secret: str, head: str, tail: str, limit: int
) -> None:
    clear_secrets()
    register_secret(secret)
    # Whatever writes the result redacts it again; a fragment left by the cut would not match.
    assert not _leaked(secret, redact(cut(head + secret + tail, limit))), name


def test_redact_value_walks_models_dicts_and_lists() -> None:
    from oiexec.core.events import TodoEntry, TodoListItem

    register_secret("TOPSECRET42")
    item = TodoListItem(id="item_0", items=[TodoEntry(text="use TOPSECRET42", completed=False)])
    masked = redact_value(item)
    assert masked.items[0].text == f"use {MASK}"
    assert item.items[0].text == "use TOPSECRET42"  # the original is left alone
    data = redact_value({"a": ["TOPSECRET42", ("x", "TOPSECRET42")], "n": 3})
    assert data == {"a": [MASK, ("x", MASK)], "n": 3}
