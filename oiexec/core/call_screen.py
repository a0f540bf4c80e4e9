"""Screening the model's tool calls before anything keeps or runs them.

A call whose arguments are far larger than any model can usefully write in one turn (a
runaway generation, a broken proxy), or whose function arguments are not a JSON object, is
not run: the model gets an error result saying what was wrong and what to do instead. The
call itself stays in the history (every wire needs a call before its output) but with its
arguments replaced by a short, clearly marked stub, so the next request, the rollout and
every resume of it stay small and sendable on every wire (the Messages wire and strict chat
servers need function arguments that parse as an object).

The agent loop screens each response as it arrives; loading a rollout screens its history
the same way, so a session written before this check (a 10 MB call kept whole) resumes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from oiexec.core.errors import ErrorKind, ToolInputError
from oiexec.core.types import HistoryItem, ModelResponse, ToolCall

__all__ = [
    "MAX_CALL_ARGUMENT_BYTES",
    "STUB_KEY",
    "Screened",
    "screen_call",
    "screen_history",
    "screen_response",
]

#: Largest arguments (UTF-8 bytes of the JSON text, or of a freeform tool's input) one tool
#: call may carry. No model writes more than about 128K tokens in one turn (~512 KB), and
#: JSON escaping of quotes and newlines can double a file's text: 1 MiB keeps every Write
#: or apply_patch a model can produce (a file of a few hundred KB) and refuses only output
#: no model meant, which would not fit the next request's context window anyway.
MAX_CALL_ARGUMENT_BYTES = 1 << 20

#: How much of refused arguments the stub keeps, so the model (and a reader of the rollout)
#: still sees what the call was about.
_KEPT_BYTES = 1_024

#: The key of a function call's stub object.
STUB_KEY = "oiexec_omitted"

_ADVICE_TOO_LARGE = (
    "Send less in one call: write a large file in parts (create it with the first part, "
    "then add the rest with further edits), split a large edit or patch into several "
    "smaller ones, and produce bulk or generated content with a command or script instead "
    "of spelling it out in the arguments."
)
_ADVICE_NOT_JSON = (
    "Send the arguments as one JSON object matching the tool's parameters, with quotes, "
    "backslashes and newlines inside strings escaped; if the text was cut off, send less in "
    "one call."
)


@dataclass(frozen=True)
class Screened:
    """A call as the history keeps it, and why it must not run (None: run it)."""

    call: ToolCall
    refusal: ToolInputError | None = None


def screen_call(call: ToolCall) -> Screened:
    """`call` unchanged when its arguments are acceptable, else its stub and the error the
    model reads instead of a result. A stub passes unchanged, so screening is idempotent."""
    text = call.arguments
    size = len(text) if text.isascii() else len(_utf8(text))
    what, verb = ("input", "is") if call.call_type == "custom" else ("arguments", "are")
    if size > MAX_CALL_ARGUMENT_BYTES:
        reason = (
            f"its {what} {verb} {size:,} bytes, over the limit of {MAX_CALL_ARGUMENT_BYTES:,} "
            "bytes for one tool call"
        )
        past = "was" if call.call_type == "custom" else "were"
        return Screened(
            _stub(call, f"the {what} ({size:,} bytes) {past} over the limit of one call"),
            _refused(call, reason, _ADVICE_TOO_LARGE, "too_large"),
        )
    if call.call_type == "custom" or not text.strip():
        return Screened(call)  # freeform text; empty arguments mean no arguments
    problem = _json_problem(text)
    if problem is None:
        return Screened(call)
    return Screened(
        _stub(call, f"the arguments were not a JSON object ({problem})"),
        _refused(call, f"its arguments are not a JSON object: {problem}", _ADVICE_NOT_JSON),
    )


def screen_response(response: ModelResponse) -> tuple[ModelResponse, dict[str, ToolInputError]]:
    """`response` with each unacceptable call stubbed, and the refusals by call id."""
    refusals: dict[str, ToolInputError] = {}
    items: list[HistoryItem] = []
    for item in response.items:
        if isinstance(item, ToolCall):
            screened = screen_call(item)
            if screened.refusal is not None:
                refusals[item.call_id] = screened.refusal
            item = screened.call
        items.append(item)
    if not refusals:
        return response, refusals
    return response.model_copy(update={"items": tuple(items)}), refusals


def screen_history(history: Sequence[HistoryItem]) -> tuple[list[HistoryItem], int]:
    """`history` with every unacceptable call stubbed (its output is kept as it was), and
    how many were."""
    screened: list[HistoryItem] = []
    count = 0
    for item in history:
        if isinstance(item, ToolCall):
            kept = screen_call(item).call
            count += kept is not item
            item = kept
        screened.append(item)
    return screened, count


def _json_problem(text: str) -> str | None:
    """Why `text` is not a JSON object, with the position of a syntax error; None if it is."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        # The text ends inside a value: the model's output was cut short (an output limit).
        cut = exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")
        return (
            f"{exc.msg} (line {exc.lineno}, column {exc.colno}; character {exc.pos} of "
            f"{len(text)}){'; the text looks cut off' if cut else ''}"
        )
    except RecursionError:
        return "nested too deeply to parse"
    if isinstance(value, dict):
        return None
    kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return f"it is {kind.get(type(value), 'a number')}, not an object"


def _refused(
    call: ToolCall, reason: str, advice: str, kind: ErrorKind = "invalid"
) -> ToolInputError:
    return ToolInputError(f"This `{call.name}` call was not run: {reason}. {advice}", kind=kind)


def _utf8(text: str) -> bytes:
    # A provider's JSON may carry a lone surrogate escape ("\ud800"); it counts, never fails.
    return text.encode("utf-8", errors="surrogatepass")


def _head(text: str) -> str:
    """The first bytes of `text`, as valid text (a cut or lone surrogate is dropped)."""
    data = _utf8(text)
    return data[:_KEPT_BYTES].decode("utf-8", errors="ignore")


def _stub(call: ToolCall, why: str) -> ToolCall:
    """`call` with its arguments replaced by a marked stub holding their first bytes: a JSON
    object for a function call (every wire can send it back), plain text for a freeform one."""
    head = _head(call.arguments)
    note = f"{why}: left out of the conversation by oiexec"
    if call.call_type == "custom":
        # Only an oversized input is stubbed, so its head is always a cut.
        arguments = f"[{STUB_KEY}: {note}; the first {_KEPT_BYTES:,} bytes follow]\n{head}"
    else:
        arguments = json.dumps({STUB_KEY: note, "received": head}, ensure_ascii=False)
    return call.model_copy(update={"arguments": arguments})
