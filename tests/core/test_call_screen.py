"""The screen every model tool call passes before the history keeps it or a tool runs it
(oiexec/core/call_screen.py): the limit, the errors the model reads, the stubs, and the
repair of a loaded history."""

from __future__ import annotations

import json

from hypothesis import example, given
from hypothesis import strategies as st

from oiexec.core.call_screen import (
    MAX_CALL_ARGUMENT_BYTES,
    STUB_KEY,
    screen_call,
    screen_history,
    screen_response,
)
from oiexec.core.types import HistoryItem, Message, ModelResponse, ToolCall, ToolOutput
from oiexec.session.repair import KILLED_OUTPUT, repair_history

LIMIT = MAX_CALL_ARGUMENT_BYTES


def _call(arguments: str, *, custom: bool = False) -> ToolCall:
    return ToolCall(
        call_id="c1",
        name="apply_patch" if custom else "Write",
        arguments=arguments,
        call_type="custom" if custom else "function",
    )


def _json_of_size(size: int) -> str:
    """A JSON object of exactly `size` bytes."""
    frame = len(json.dumps({"content": ""}))
    return json.dumps({"content": "a" * (size - frame)})


def test_the_limit_is_bytes_of_the_arguments_inclusive() -> None:
    assert screen_call(_call(_json_of_size(LIMIT))).refusal is None
    over = screen_call(_call(_json_of_size(LIMIT + 1)))
    assert over.refusal is not None and over.refusal.kind == "too_large"
    assert f"its arguments are {LIMIT + 1:,} bytes, over the limit of {LIMIT:,}" in (
        over.refusal.message
    )
    # Bytes, not characters: 2-byte characters reach the limit at half the length.
    wide = json.dumps({"content": "é" * (LIMIT // 2)}, ensure_ascii=False)
    assert screen_call(_call(wide)).refusal is not None
    # Lone surrogates (a provider's "\ud800" escapes) count and never reach the stub.
    lone = screen_call(_call("\ud800" * LIMIT, custom=True))
    assert lone.refusal is not None and "3,145,728 bytes" in lone.refusal.message
    lone.call.arguments.encode("utf-8")


def test_an_oversized_function_call_becomes_a_small_json_stub() -> None:
    original = _call(json.dumps({"file_path": "big.txt", "content": "x" * 10_000_000}))
    screened = screen_call(original)
    assert screened.refusal is not None
    message = screened.refusal.message
    assert message.startswith("This `Write` call was not run: its arguments are 10,000,")
    assert "write a large file in parts" in message
    stub = json.loads(screened.call.arguments)
    assert stub[STUB_KEY].startswith("the arguments (10,000,")
    assert stub["received"].startswith('{"file_path": "big.txt"')
    assert len(screened.call.arguments) < 2_000
    assert screened.call.call_id == original.call_id and screened.call.name == original.name


def test_an_oversized_custom_call_becomes_a_marked_text_stub() -> None:
    screened = screen_call(_call("*** Begin Patch\n" + "+y\n" * 1_000_000, custom=True))
    assert screened.refusal is not None
    assert "its input is 3,000,016 bytes" in screened.refusal.message
    assert screened.call.arguments.startswith(f"[{STUB_KEY}: the input (3,000,016 bytes) was")
    assert "*** Begin Patch" in screened.call.arguments
    assert screened.call.call_type == "custom"


def test_unparsable_arguments_name_the_position() -> None:
    screened = screen_call(_call('{"file_path": "a", "content": "x" "y"}'))
    assert screened.refusal is not None
    assert "Expecting ',' delimiter (line 1, column 35; character 34 of 38)" in (
        screened.refusal.message
    )
    assert "the text looks cut off" not in screened.refusal.message
    assert (
        json.loads(screened.call.arguments)["received"] == '{"file_path": "a", "content": "x" "y"}'
    )
    cut = screen_call(_call('{"file_path": "a", "content": "unterminated'))
    assert cut.refusal is not None and "the text looks cut off" in cut.refusal.message


def test_json_that_is_not_an_object_is_refused() -> None:
    for text, kind in (
        ("[1, 2]", "an array"),
        ('"x"', "a string"),
        ("null", "null"),
        ("3", "a number"),
    ):
        screened = screen_call(_call(text))
        assert screened.refusal is not None, text
        assert f"it is {kind}, not an object" in screened.refusal.message


def test_acceptable_calls_pass_untouched() -> None:
    for call in (
        _call('{"file_path": "a", "content": "b"}'),
        _call(""),  # no arguments at all, as some providers send for a tool without any
        _call("  "),
        _call("not json at all: freeform text", custom=True),
    ):
        screened = screen_call(call)
        assert screened.refusal is None and screened.call is call


def test_screen_response_stubs_only_the_bad_calls() -> None:
    good = ToolCall(call_id="good", name="Read", arguments='{"file_path": "a"}')
    bad = ToolCall(call_id="bad", name="Write", arguments="{")
    text = Message(role="assistant", text="working")
    response = ModelResponse(items=(text, good, bad))
    screened, refused = screen_response(response)
    assert set(refused) == {"bad"}
    assert screened.items[:2] == (text, good)
    assert STUB_KEY in json.loads(screened.items[2].arguments)  # type: ignore[union-attr]
    untouched, none = screen_response(ModelResponse(items=(text, good)))
    assert none == {} and untouched.items == (text, good)


def test_a_loaded_history_is_repaired_the_same_way() -> None:
    big = ToolCall(call_id="big", name="exec_command", arguments=_json_of_size(5 * LIMIT))
    ran = ToolOutput(call_id="big", output="ran")
    orphan = ToolCall(call_id="orphan", name="exec_command", arguments="{}")
    history: list[HistoryItem] = [Message(role="user", text="go"), big, ran, orphan]
    repaired, closed = repair_history(history)
    assert closed == 1
    assert repaired[0] == history[0] and repaired[2] == ran  # the output stays as recorded
    assert json.loads(repaired[1].arguments)[STUB_KEY]  # type: ignore[union-attr]
    assert repaired[-1] == ToolOutput(
        call_id="orphan", output=KILLED_OUTPUT, is_error=True, call_type="function"
    )
    assert screen_history(repaired)[1] == 0  # idempotent: a stub passes the screen


@given(st.text(max_size=300), st.booleans())
@example('{"a": "\\ud800"}', False)  # a lone surrogate escape parses; an object passes
@example('{"a": ' * 50_000, False)  # nested too deep for the parser
@example("\x00" * 5, True)
@example('{"a": "\ud800', False)  # a lone surrogate, as a provider's JSON escape can carry
@example("\ud800" * 10, True)
def test_screened_calls_are_small_sendable_and_stable(text: str, custom: bool) -> None:
    screened = screen_call(_call(text, custom=custom))
    kept = screened.call.arguments
    assert len(kept.encode("utf-8", "surrogatepass")) <= max(
        len(text.encode("utf-8", "surrogatepass")), 8_000
    )
    if not custom and kept.strip():
        assert isinstance(json.loads(kept), dict)
    assert screen_call(screened.call).call == screened.call
    assert screen_call(screened.call).refusal is None
