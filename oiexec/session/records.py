"""Rollout records, typed: one pydantic model per record type, in one union on `type`.

A rollout line is `{"timestamp": "...Z", "ordinal": N, "type": T, "version": V, "payload":
{...}}`: Codex's line plus `version`, the format of this record. Codex's line has no version
and its readers pick the keys they know (Codex itself adds `metadata` to some lines), so the
version is one more key beside them, not a field inside a payload whose shape Codex defines.
A line without `version` was written before records carried one (`LEGACY_VERSION`); its
format is the one read today, so it reads the same way.

The same models serve both directions, in two modes:

- writing (`check_record`): every field has its type, no key is unknown, the fields a record
  cannot do without are there. A record that fails is a programming error and is never written.
- reading (`parse_record`): a rollout may come from an older or newer oiexec, from Codex, or be
  hand-edited, so a field of the wrong type counts as missing and unknown keys are kept. Only
  what a resume cannot do without is strict: history items (`response_item`, a compaction's
  `replacement_history`) and cumulative usage (`token_count`); these fail as corruption. A
  record type or `event_msg` type this build does not know parses as `UnknownRecord` /
  `OtherEvent`, which readers skip. A record of a newer `version` is read as the current
  format (what a reader without versions did); only its strict parts can fail.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, ClassVar, Literal, Self, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    ModelWrapValidatorHandler,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    Tag,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    model_validator,
)

from oiexec.core.events import Usage, check_event
from oiexec.core.types import HistoryItem

__all__ = [
    "LEGACY_VERSION",
    "ROLLOUT_VERSION",
    "Compacted",
    "CompactedRecord",
    "EventMsg",
    "EventMsgRecord",
    "FileReadState",
    "InvalidRecord",
    "OtherEvent",
    "ResponseItemRecord",
    "RolloutRecord",
    "SessionMeta",
    "SessionMetaRecord",
    "TaskComplete",
    "TaskStarted",
    "ThreadEventMsg",
    "TokenCount",
    "TurnAborted",
    "TurnContext",
    "TurnContextRecord",
    "UnknownRecord",
    "check_record",
    "parse_record",
    "payload_location",
]

#: The format records are written in. Raise it when a record's meaning changes in a way an
#: older reader would misread, and teach `parse_record` the older one.
ROLLOUT_VERSION = 1
#: The version of a line that has none: written before records carried a version.
LEGACY_VERSION = 0

_WRITING = {"writing": True}

_M = TypeVar("_M", bound="_Model")


class InvalidRecord(ValueError):
    """A record the code was about to write does not match its model (a programming error)."""


def _writing(info: ValidationInfo) -> bool:
    context = info.context
    return isinstance(context, dict) and context.get("writing") is True


Str = StrictStr | None
Int = StrictInt | None
Bool = StrictBool | None
#: A cost in USD as JSON writes it (`0` is an int there).
Usd = Annotated[StrictFloat | StrictInt, Field(ge=0, allow_inf_nan=False)] | None


def _lenient(cls: type[_M], data: Any, handler: ModelWrapValidatorHandler[_M]) -> _M:
    """Reading: a field of the wrong type counts as missing, unless the model lists it in
    `_strict`. One validator per model, not one per field: the common case (nothing wrong)
    costs a Python call per model, not per field."""
    try:
        return handler(data)
    except ValidationError as exc:
        if not isinstance(data, dict):
            raise
        wrong: set[str] = set()
        for error in exc.errors():
            field = error["loc"][0] if error["loc"] else None
            if not isinstance(field, str) or field in cls._strict or field not in cls.model_fields:
                raise
            wrong.add(field)
        return handler({key: value for key, value in data.items() if key not in wrong})


class _Model(BaseModel):
    """Unknown keys are kept when reading (Codex's, a newer oiexec's) and refused when
    writing; `_required` fields must be present when writing."""

    model_config = ConfigDict(extra="allow", frozen=True)

    # Class constants, not pydantic private attributes (those are set up on every instance).
    _required: ClassVar[tuple[str, ...]] = ()
    _strict: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="wrap")
    @classmethod
    def _read_or_write(
        cls, data: Any, handler: ModelWrapValidatorHandler[Self], info: ValidationInfo
    ) -> Self:
        if not _writing(info):
            return _lenient(cls, data, handler)
        model = handler(data)
        model._check_written()
        return model

    def _check_written(self) -> None:
        if self.model_extra:
            raise ValueError(f"unknown field(s): {', '.join(sorted(self.model_extra))}")
        missing = [name for name in self._required if getattr(self, name) is None]
        if missing:
            raise ValueError(f"missing field(s): {', '.join(missing)}")


# --- session_meta -------------------------------------------------------------------------


class BaseInstructions(_Model):
    text: Str = None


class GitInfo(_Model):
    commit_hash: Str = None
    branch: Str = None


class SessionMeta(_Model):
    """The first record of a thread (Codex's fields; `forked_from_*` on a fork)."""

    _required = ("id",)

    session_id: Str = None
    id: Str = None
    timestamp: Str = None
    cwd: Str = None
    originator: Str = None
    cli_version: Str = None
    source: Str = None
    model_provider: Str = None
    base_instructions: BaseInstructions | None = None
    git: GitInfo | None = None
    forked_from_id: Str = None
    forked_from_ordinal_exclusive: Int = None


# --- turn_context -------------------------------------------------------------------------


class SandboxPolicyRecord(_Model):
    type: Str = None
    network_access: Bool = None
    exclude_tmpdir_env_var: Bool = None
    exclude_slash_tmp: Bool = None


class Override(_Model):
    """A setting a resume changed from the session's run, and what changed it."""

    name: Str = None
    before: Str = None
    after: Str = None
    source: Str = None
    sandbox: Bool = None


class TurnContext(_Model):
    """What a run was made with (Codex's fields, plus what a resume restores). Rollouts from
    before a field was recorded lack it."""

    cwd: Str = None
    approval_policy: Str = None
    sandbox_policy: SandboxPolicyRecord | None = None
    model: Str = None
    model_provider: Str = None
    effort: Str = None
    harness: Str = None
    writable_roots: list[StrictStr] | None = None
    network_access: Bool = None
    output_schema: dict[str, Any] | None = None
    overrides: list[Override] | None = None


# --- compacted ----------------------------------------------------------------------------


def _list_or_missing(value: Any, info: ValidationInfo) -> Any:
    # A compaction without a list is not one this build can replay: it is skipped, as before.
    return value if isinstance(value, list) or _writing(info) else None


class Compacted(_Model):
    """A context compaction: the summarised history replaces everything before it."""

    _required = ("replacement_history",)
    _strict = frozenset({"replacement_history"})

    message: Str = None
    replacement_history: Annotated[list[HistoryItem] | None, BeforeValidator(_list_or_missing)] = (
        None
    )


# --- event_msg ----------------------------------------------------------------------------


class TaskStarted(_Model):
    type: Literal["task_started"]


class TaskComplete(_Model):
    """How a run ended. Rollouts from before outcomes were recorded have no `status`."""

    type: Literal["task_complete"]
    last_agent_message: Str = None
    duration_ms: Int = None
    status: Str = None
    exit_code: Int = None
    failure: Str = None
    #: What this run cost in USD; null when no price was known.
    cost_usd: Usd = None


class TokenCount(_Model):
    """Cumulative usage of the thread; strict, a resume continues counting from it."""

    _required = ("total_token_usage",)
    _strict = frozenset({"total_token_usage"})

    type: Literal["token_count"]
    total_token_usage: Usage | None = None
    #: The thread's cost so far in USD, earlier runs (and a fork's parent) included; null
    #: when any part of it is unknown, or absent in a rollout from before costs were kept.
    session_cost_usd: Usd = None


class ThreadEventMsg(_Model):
    """A public event mirrored into the rollout, kept as printed (`sessions show` lists the
    `item.completed` items verbatim)."""

    _required = ("event",)

    type: Literal["thread_event"]
    event: dict[str, Any] | None = None

    def _check_written(self) -> None:
        super()._check_written()
        check_event(self.event)  # the events' own adapter: its schema is built once


class FileStamp(_Model):
    mtime_ns: Int = None
    sha256: Str = None
    window: list[StrictInt | None] | None = None
    written: Bool = None


class FileReadState(_Model):
    """One change to the file tools' read-before-write state; `stamp` None forgets `path`."""

    _required = ("path",)

    type: Literal["file_read_state"]
    path: Str = None
    stamp: FileStamp | None = None


class TurnAborted(_Model):
    """A resume found the run before it killed; `closed_calls` calls were closed."""

    type: Literal["turn_aborted"]
    reason: Str = None
    closed_calls: Int = None


class ModelRerouted(_Model):
    """The run moved to a model of `model_fallbacks`: a resume continues on `model` at
    `model_provider`."""

    _required = ("model", "model_provider")

    type: Literal["model_rerouted"]
    #: The model it left, as `provider/model`.
    previous: Str = None
    model: Str = None
    model_provider: Str = None
    reason: Str = None


class OtherEvent(_Model):
    """An `event_msg` type this build does not write (Codex's, a newer oiexec's): skipped."""

    type: Any = None

    def _check_written(self) -> None:
        raise ValueError(f"unknown event_msg type {self.type!r}")


_EVENT_TYPES = frozenset(
    {
        "task_started",
        "task_complete",
        "token_count",
        "thread_event",
        "file_read_state",
        "turn_aborted",
        "model_rerouted",
    }
)


def _tagger(known: frozenset[str], fallback: str) -> Callable[[Any], str]:
    """The discriminator of a union on `type` (a dict when reading, a model when writing):
    a type this build does not know goes to the `fallback` member, which readers skip."""

    def tag(value: Any) -> str:
        kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
        return kind if isinstance(kind, str) and kind in known else fallback

    return tag


EventMsg = Annotated[
    Annotated[TaskStarted, Tag("task_started")]
    | Annotated[TaskComplete, Tag("task_complete")]
    | Annotated[TokenCount, Tag("token_count")]
    | Annotated[ThreadEventMsg, Tag("thread_event")]
    | Annotated[FileReadState, Tag("file_read_state")]
    | Annotated[TurnAborted, Tag("turn_aborted")]
    | Annotated[ModelRerouted, Tag("model_rerouted")]
    | Annotated[OtherEvent, Tag("other")],
    Discriminator(_tagger(_EVENT_TYPES, "other")),
]


# --- records ------------------------------------------------------------------------------


class _Record(_Model):
    """The line around a payload. Unknown keys (Codex's `metadata`) are kept; a `version`
    that is not a number reads as the format before versions."""

    _strict = frozenset({"type", "payload"})

    timestamp: Str = None
    #: Missing in rollouts of Codex before 0.169.
    ordinal: Int = None
    version: StrictInt = LEGACY_VERSION


class SessionMetaRecord(_Record):
    type: Literal["session_meta"]
    payload: SessionMeta


class TurnContextRecord(_Record):
    type: Literal["turn_context"]
    payload: TurnContext


class ResponseItemRecord(_Record):
    """One history item as the model saw or sent it."""

    type: Literal["response_item"]
    payload: HistoryItem


class CompactedRecord(_Record):
    type: Literal["compacted"]
    payload: Compacted


class EventMsgRecord(_Record):
    type: Literal["event_msg"]
    payload: EventMsg


class UnknownRecord(_Record):
    """A record type this build does not write (Codex's `world_state`, a newer oiexec's):
    counted, otherwise skipped."""

    type: str
    payload: dict[str, Any]

    def _check_written(self) -> None:
        raise ValueError(f"unknown record type {self.type!r}")


_RECORD_TYPES = frozenset(
    {"session_meta", "turn_context", "response_item", "compacted", "event_msg"}
)


RolloutRecord = Annotated[
    Annotated[SessionMetaRecord, Tag("session_meta")]
    | Annotated[TurnContextRecord, Tag("turn_context")]
    | Annotated[ResponseItemRecord, Tag("response_item")]
    | Annotated[CompactedRecord, Tag("compacted")]
    | Annotated[EventMsgRecord, Tag("event_msg")]
    | Annotated[UnknownRecord, Tag("unknown")],
    Discriminator(_tagger(_RECORD_TYPES, "unknown")),
]

_RECORD: TypeAdapter[RolloutRecord] = TypeAdapter(RolloutRecord)


def check_record(record_type: str, payload: Mapping[str, Any]) -> None:
    """Raises `InvalidRecord` unless `payload` is a well-formed `record_type` record."""
    try:
        _RECORD.validate_python({"type": record_type, "payload": payload}, context=_WRITING)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"][1:])
        raise InvalidRecord(f"invalid {record_type} record: {where}: {first['msg']}") from exc


def parse_record(line: Mapping[str, Any]) -> RolloutRecord:
    """A rollout line (already checked to have a string `type` and an object `payload`) as
    its record. Raises `ValidationError` for the strict parts only (see the module doc)."""
    return _RECORD.validate_python(line)


def payload_location(loc: tuple[int | str, ...]) -> str:
    """Where in a value a reading error is, as readers reported it before records were
    typed: inside the history item or usage that failed, without the record around it."""
    kind = loc[0] if loc else None
    # (tag, "payload", ...) for a history item; (tag, "payload", subtag, field, index?, ...)
    # for a compaction's items or an event's usage.
    if kind == "response_item":
        inner = loc[2:]
    elif kind == "compacted":
        inner = loc[4:]  # "replacement_history", index
    elif kind == "event_msg":
        inner = loc[4:]  # event type, "total_token_usage"
    else:
        inner = loc[2:]
    return ".".join(str(part) for part in inner)
