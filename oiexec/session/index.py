"""Reading rollouts back: load one for resume or fork, find one by id or recency, list them.

A rollout written by a run that was killed mid-record ends in a partial line without a
newline; that line is dropped. Anything else that does not parse is corruption and raises
`SessionError` naming the file and line. Each line parses through the record union of
`session/records.py`; record types this build does not know are counted and skipped.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from oiexec.core.errors import SessionError
from oiexec.core.events import Usage
from oiexec.core.types import HistoryItem, Message
from oiexec.session.records import (
    ROLLOUT_VERSION,
    CompactedRecord,
    EventMsgRecord,
    FileReadState,
    ModelRerouted,
    ResponseItemRecord,
    RolloutRecord,
    SessionMeta,
    SessionMetaRecord,
    TaskComplete,
    TokenCount,
    TurnContextRecord,
    parse_record,
    payload_location,
)
from oiexec.session.repair import repair_history
from oiexec.session.settings import (
    INCOMPLETE,
    Outcome,
    RunSettings,
    is_run_start,
    outcome_of,
    settings_of,
)

__all__ = [
    "FILE_STATE",
    "Line",
    "LoadedSession",
    "SessionInfo",
    "find_last",
    "find_rollout",
    "iter_rollouts",
    "list_sessions",
    "load_rollout",
    "read_lines",
    "read_records",
    "sessions_dir",
]

#: The `event_msg` type of one change to the file tools' read-before-write state
#: (tools/fs/state.py): a resumed run restores it, so a file read before is not refused.
FILE_STATE = "file_read_state"

#: Any JSON value; pydantic's parser reads a line about twice as fast as `json.loads`.
_JSON: TypeAdapter[Any] = TypeAdapter(Any)


def sessions_dir(home: Path) -> Path:
    return home / "sessions"


@dataclass(frozen=True)
class LoadedSession:
    """Everything a resumed or forked run needs from an existing rollout."""

    path: Path
    thread_id: str
    meta: dict[str, Any]
    history: list[HistoryItem]
    #: Cumulative usage from the last `token_count` record (zero when there is none).
    usage: Usage
    #: Number of records read; the next record's ordinal.
    ordinal_count: int
    #: The cwd of the latest `turn_context`, else the one in `session_meta`.
    cwd: str | None = None
    #: Payload of the last `event_msg`/`token_count` record, copied verbatim on fork.
    last_token_count: dict[str, Any] | None = field(default=None, repr=False)
    #: What the latest run was made with (its `turn_context`).
    settings: RunSettings = field(default_factory=RunSettings)
    #: How the latest run ended; `incomplete` when it was killed before saying.
    outcome: Outcome = INCOMPLETE
    #: Runs (`turn_context` records) in the thread.
    runs: int = 0
    #: Tool calls a killed run left without output, closed with a synthetic one in `history`.
    closed_calls: int = 0
    #: The file tools' read-before-write journal (`FILE_STATE` event payloads), in order.
    file_state: tuple[dict[str, Any], ...] = ()
    #: The first user message after the first `turn_context` (earlier ones are the injected
    #: AGENTS.md and environment context), in whatever history it was later compacted from.
    first_prompt: str | None = field(default=None, repr=False)
    #: The thread's cost so far in USD, from the last `token_count` record (0 when there is
    #: none; None when unknown: a run without a price, or one from before costs were kept).
    cost_usd: float | None = 0.0

    @property
    def model_provider(self) -> str | None:
        value = self.meta.get("model_provider")
        return value if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class Line:
    """One complete record of a rollout, parsed."""

    number: int
    record: RolloutRecord
    #: The payload as written: what a fork copies verbatim and the settings helpers read.
    payload: dict[str, Any]


def read_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yields (line number, record) for each complete record of a rollout, as written."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SessionError(f"cannot read session file {path}: {exc.strerror}") from exc
    lines = data.split(b"\n")
    # A final chunk without a newline is a record the writer never finished (or "" after the
    # last newline); it is only kept when it parses.
    tail = lines.pop()
    for number, raw in enumerate(lines, start=1):
        if raw.strip():
            yield number, _parse_line(path, number, raw)
    if tail.strip():
        try:
            record = _parse_line(path, len(lines) + 1, tail)
        except SessionError:
            return
        yield len(lines) + 1, record


def read_lines(path: Path, only: frozenset[str] | None = None) -> Iterator[Line]:
    """Each complete record of a rollout through the record union; with `only`, just the
    records of those types (the others are not validated)."""
    for number, raw in read_records(path):
        if only is None or raw["type"] in only:
            yield Line(number, _typed(path, number, raw), raw["payload"])


def _parse_line(path: Path, number: int, raw: bytes) -> dict[str, Any]:
    try:
        record = _JSON.validate_json(raw)
    except ValidationError:
        # `json` words what is wrong as this message always has (and reads what pydantic's
        # stricter parser refuses, such as NaN).
        try:
            record = json.loads(raw)
        except ValueError as exc:
            raise SessionError(f"corrupt session file {path}, line {number}: {exc}") from exc
    if (
        not isinstance(record, dict)
        or not isinstance(record.get("type"), str)
        or not isinstance(record.get("payload"), dict)
    ):
        raise SessionError(
            f"corrupt session file {path}, line {number}: not a rollout record "
            "(expected an object with `type` and `payload`)"
        )
    return record


def _typed(path: Path, number: int, raw: dict[str, Any]) -> RolloutRecord:
    try:
        return parse_record(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = payload_location(first["loc"])
        version = raw.get("version")
        newer = (
            f" (a record of format {version}; this oiexec reads up to {ROLLOUT_VERSION})"
            if isinstance(version, int) and version > ROLLOUT_VERSION
            else ""
        )
        raise SessionError(
            f"corrupt session file {path}, line {number}: {where}: {first['msg']}{newer}"
        ) from exc


@dataclass
class _Reading:
    """What `load_rollout` gathers while it walks the records."""

    meta: SessionMeta | None = None
    meta_payload: dict[str, Any] = field(default_factory=dict)
    history: list[HistoryItem] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = 0.0
    last_token_count: dict[str, Any] | None = None
    cwd: str | None = None
    settings: RunSettings = field(default_factory=RunSettings)
    outcome: Outcome = INCOMPLETE
    runs: int = 0
    awaiting_context: bool = False
    count: int = 0
    file_state: list[dict[str, Any]] = field(default_factory=list)
    seen_context: bool = False
    first_prompt: str | None = None

    def take(self, line: Line) -> None:
        record, payload = line.record, line.payload
        self.count += 1
        if isinstance(record, SessionMetaRecord):
            if self.meta is None:
                self.meta, self.meta_payload = record.payload, payload
                self.cwd = _or(record.payload.cwd, self.cwd)
        elif is_run_start(record.type, payload):
            self.runs, self.outcome, self.awaiting_context = self.runs + 1, INCOMPLETE, True
        elif isinstance(record, TurnContextRecord):
            self.cwd = _or(record.payload.cwd, self.cwd)
            self.settings = settings_of(payload)
            if not self.awaiting_context:  # a rollout without mirrored events
                self.runs, self.outcome = self.runs + 1, INCOMPLETE
            self.awaiting_context, self.seen_context = False, True
        elif isinstance(record, ResponseItemRecord):
            self.history.append(record.payload)
            self._maybe_first_prompt(record.payload)
        elif isinstance(record, CompactedRecord):
            # A context compaction: the summarised history replaces everything before it.
            replacement = record.payload.replacement_history
            if replacement is not None:
                self.history = list(replacement)
        elif isinstance(record, EventMsgRecord):
            self._event(record.payload, payload)

    def _event(self, event: object, payload: dict[str, Any]) -> None:
        if isinstance(event, TaskComplete):
            self.outcome = outcome_of(payload)
        elif isinstance(event, FileReadState):
            self.file_state.append(payload)
        elif isinstance(event, ModelRerouted) and event.model and event.model_provider:
            # The run moved to a fallback model: a resume goes on with it.
            self.settings = replace(
                self.settings, model=event.model, model_provider=event.model_provider
            )
        elif isinstance(event, TokenCount) and event.total_token_usage is not None:
            self.usage, self.last_token_count = event.total_token_usage, payload
            self.cost_usd = event.session_cost_usd

    def _maybe_first_prompt(self, item: HistoryItem) -> None:
        if (
            self.first_prompt is None
            and self.seen_context
            and isinstance(item, Message)
            and item.role == "user"
        ):
            self.first_prompt = item.text


def load_rollout(path: Path) -> LoadedSession:
    """Rebuilds a thread's history and cumulative usage from its rollout."""
    reading = _Reading()
    for line in read_lines(path):
        reading.take(line)
    meta = reading.meta
    if meta is None or meta.id is None:
        raise SessionError(f"corrupt session file {path}: no session_meta record with an id")
    history, closed = repair_history(reading.history)
    settings = reading.settings
    if settings.model_provider is None and meta.model_provider is not None:
        # Codex records the provider in `session_meta` only: a resume continues with it.
        settings = replace(settings, model_provider=meta.model_provider)
    return LoadedSession(
        path=path,
        thread_id=meta.id,
        meta=reading.meta_payload,
        history=history,
        usage=reading.usage,
        ordinal_count=reading.count,
        cwd=reading.cwd,
        last_token_count=reading.last_token_count,
        settings=settings,
        outcome=reading.outcome,
        runs=reading.runs,
        closed_calls=closed,
        file_state=tuple(reading.file_state),
        first_prompt=reading.first_prompt,
        # A run killed before it ended recorded neither its tokens nor its cost.
        cost_usd=None if reading.outcome is INCOMPLETE and reading.runs else reading.cost_usd,
    )


def _or(value: str | None, default: str | None) -> str | None:
    return value if value is not None else default


def _str_or(value: Any, default: str | None) -> str | None:
    return value if isinstance(value, str) else default


# --- lookup ------------------------------------------------------------------------------


def iter_rollouts(home: Path) -> list[Path]:
    """Every rollout under the home, newest update first."""
    root = sessions_dir(home)
    if not root.is_dir():
        return []
    found: list[tuple[int, str, Path]] = []
    for path in root.glob("*/*/*/rollout-*.jsonl"):
        try:
            found.append((path.stat().st_mtime_ns, path.name, path))
        except OSError:
            continue
    found.sort(reverse=True)
    return [path for _, _, path in found]


def find_rollout(home: Path, session_id: str) -> Path | None:
    """The rollout of a thread id (any UUID spelling). Thread names are not stored, so a
    non-UUID never matches."""
    try:
        wanted = str(uuid.UUID(session_id.strip()))
    except ValueError:
        return None
    root = sessions_dir(home)
    if not root.is_dir():
        return None
    matches = sorted(root.glob(f"*/*/*/rollout-*-{wanted}.jsonl"))
    return matches[0] if matches else None


def find_last(
    home: Path, *, cwd: Path, model_provider: str | None = None, all_cwds: bool = False
) -> Path | None:
    """The most recently updated rollout whose latest cwd is `cwd` (any cwd with
    `all_cwds`), of any provider unless `model_provider` names one. Unreadable rollouts are
    skipped, not fatal."""
    wanted = _norm(str(cwd))
    for path in iter_rollouts(home):
        try:
            provider, last_cwd = _provider_and_cwd(path)
        except SessionError:
            continue
        if model_provider is not None and provider != model_provider:
            continue
        if all_cwds or (last_cwd is not None and _norm(last_cwd) == wanted):
            return path
    return None


_WHERE = frozenset({"session_meta", "turn_context"})


def _provider_and_cwd(path: Path) -> tuple[str | None, str | None]:
    provider: str | None = None
    cwd: str | None = None
    seen_meta = False
    for line in read_lines(path, only=_WHERE):
        record = line.record
        if isinstance(record, SessionMetaRecord) and not seen_meta:
            seen_meta = True
            provider = record.payload.model_provider
            cwd = _or(record.payload.cwd, cwd)
        elif isinstance(record, TurnContextRecord):
            cwd = _or(record.payload.cwd, cwd)
    return provider, cwd


def _norm(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


# --- listing for humans -------------------------------------------------------------------


@dataclass(frozen=True)
class SessionInfo:
    thread_id: str
    path: Path
    created_at: str | None
    updated_at: datetime
    cwd: str | None
    model_provider: str | None
    #: The first prompt of the thread, shortened (None when it never got one).
    preview: str | None
    #: The model of the latest run.
    model: str | None = None
    #: Runs (exec, resumes) in the thread.
    runs: int = 0
    outcome: Outcome = INCOMPLETE
    #: What the thread cost in USD so far (None: unknown).
    cost_usd: float | None = 0.0


def list_sessions(home: Path, cwd: Path | None = None) -> list[SessionInfo]:
    """Readable rollouts, newest update first; only those last run in `cwd` when given."""
    wanted = _norm(str(cwd)) if cwd is not None else None
    infos: list[SessionInfo] = []
    for path in iter_rollouts(home):
        try:
            loaded = load_rollout(path)
            mtime = path.stat().st_mtime
        except (SessionError, OSError):
            continue
        if wanted is not None and (loaded.cwd is None or _norm(loaded.cwd) != wanted):
            continue
        infos.append(
            SessionInfo(
                thread_id=loaded.thread_id,
                path=path,
                created_at=_str_or(loaded.meta.get("timestamp"), None),
                updated_at=datetime.fromtimestamp(mtime, tz=UTC),
                cwd=loaded.cwd,
                model_provider=loaded.model_provider,
                preview=_preview(loaded.first_prompt),
                model=loaded.settings.model,
                runs=loaded.runs,
                outcome=loaded.outcome,
                cost_usd=loaded.cost_usd,
            )
        )
    return infos


def _preview(prompt: str | None, limit: int = 80) -> str | None:
    """The first prompt on one line, shortened."""
    if prompt is None:
        return None
    text = " ".join(prompt.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
