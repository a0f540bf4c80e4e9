"""What the three wires' event models share: the base model, reading one event into a model,
and turning an error the server sent inside its stream into the exception the retry
machinery understands.

A wrong shape (an output item that is a string, a call without a name, `choices` that is a
number) is a protocol error, not a bug in the runner: it becomes `StreamInterrupted`, so the
request is re-sent as for a garbled stream, and once `stream_max_retries` is spent the run
fails with the provider's exit code and the field path in the message. The raw event goes to
the `oiexec.providers` logger at debug level (redacted and cut), which the run log records.
"""

from __future__ import annotations

import json
import logging
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, model_validator

from oiexec.core.errors import ProviderError
from oiexec.core.redact import redact
from oiexec.providers.answers import context_overflow, retry_after_hint, stream_error_verdict
from oiexec.providers.http import STREAM_DISCONNECTED, StreamInterrupted

__all__ = [
    "LOGGER_NAME",
    "ErrorBody",
    "Text",
    "WireModel",
    "as_text",
    "field_path",
    "read",
    "stream_failure",
    "wrong_shape",
]

#: The logger a wrong-shaped event is recorded on, at debug level.
LOGGER_NAME = "oiexec.providers"
#: How much of a wrong-shaped event the debug record keeps.
_MAX_EVENT_IN_LOG = 2_000
_log = logging.getLogger(LOGGER_NAME)
#: pydantic's words for the common faults, without the names of the runner's private models.
_PLAIN = {
    "missing": "field required",
    "model_type": "expected an object",
    "model_attributes_type": "expected an object",
    "dict_type": "expected an object",
    "list_type": "expected a list",
    "string_type": "expected a string",
    "int_type": "expected an integer",
    "int_parsing": "expected an integer",
    "int_from_float": "expected an integer",
}

M = TypeVar("M", bound=BaseModel)


class WireModel(BaseModel):
    """An event, or a part of one. Fields the runner does not read are ignored, so a provider
    that adds fields (they all do, all the time) is not an error; a field the runner reads
    must have its type."""

    model_config = ConfigDict(extra="ignore", frozen=True)


def as_text(value: Any) -> str | None:
    """Error codes and messages are only shown, never acted on beyond a comparison, so any
    JSON there is taken as text (gateways send `"code": 502`, or an object as the message)."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


#: A field that is shown to the user whatever JSON it holds.
Text = Annotated[str | None, BeforeValidator(as_text)]


class ErrorBody(WireModel):
    """An error the server sent inside its stream. It is read whatever its shape (a bare
    string is its message): the run reports it either way, and calling it a wrong shape
    would hide the server's words."""

    code: Text = None
    type: Text = None
    message: Text = None

    @model_validator(mode="before")
    @classmethod
    def _bare(cls, value: Any) -> Any:
        return value if isinstance(value, dict) else {"message": as_text(value)}


def read(model: type[M], data: Any, *, event: str, root: str = "") -> M:
    """`data` as `model`, or `StreamInterrupted` naming the event and the field path
    (`response.output_item.done: item.type: field required`). `root` prefixes the path when
    `data` is a part of the event (`item`, `response.output[2]`)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise wrong_shape(event, exc, data, root=root) from None


def wrong_shape(
    event: str, exc: ValidationError, data: Any, *, root: str = ""
) -> StreamInterrupted:
    """The retryable error for an event whose shape the runner cannot use, logged with the
    raw event."""
    errors = exc.errors(include_url=False, include_input=False)
    first = errors[0]
    path = field_path(root, first["loc"])
    reason = _PLAIN.get(first["type"]) or first["msg"][:1].lower() + first["msg"][1:]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    detail = f"{event}: {path}: {reason}{more}" if path else f"{event}: {reason}{more}"
    if _log.isEnabledFor(logging.DEBUG):
        raw = redact(_dump(data))  # before the cut, which could leave part of a secret
        cut = raw[:_MAX_EVENT_IN_LOG] + ("…" if len(raw) > _MAX_EVENT_IN_LOG else "")
        _log.debug("provider event of the wrong shape: %s; event: %s", detail, cut)
    return StreamInterrupted(f"the server sent an event of the wrong shape: {detail}")


def field_path(root: str, loc: tuple[int | str, ...]) -> str:
    """`item.content[0].type` from a root and a pydantic error location."""
    path = root
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


def _dump(data: Any) -> str:
    try:
        return json.dumps(data, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return repr(data)


def stream_failure(code: str | None, message: str, *, shown: str) -> Exception:
    """The exception for an error the server sent inside its stream: `StreamInterrupted`
    (re-sent within `stream_max_retries`, after the wait the message asks for, if any) for a
    transient one, `ContextWindowExceeded` for a request too long, `ProviderError` for the
    rest. `shown` is how the message names it (`overloaded_error: Overloaded`)."""
    verdict = stream_error_verdict(code, message)
    if verdict == "retry":
        return StreamInterrupted(shown, retry_after=retry_after_hint(message))
    if verdict == "context_overflow":
        return context_overflow(f"the model refused the request: {shown}")
    return ProviderError(f"{STREAM_DISCONNECTED}: {shown}")
