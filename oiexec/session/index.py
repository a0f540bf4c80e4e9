"""Reading rollouts back: load one for resume or fork, find one by id or recency, list them.

A rollout written by a run that was killed mid-record ends in a partial line without a
newline; that line is dropped. Anything else that does not parse is corruption and raises
`SessionError` naming the file and line.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

from oiexec.core.errors import SessionError
from oiexec.core.events import Usage
from oiexec.core.types import HistoryItem, Message
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
    "LoadedSession",
    "SessionInfo",
    "find_last",
    "find_rollout",
    "iter_rollouts",
    "list_sessions",
    "load_rollout",
    "read_records",
    "sessions_dir",
]

_T = TypeVar("_T")

#: The `event_msg` type of one change to the file tools' read-before-write state
#: (tools/fs/state.py): a resumed run restores it, so a file read before is not refused.
FILE_STATE = "file_read_state"

_HISTORY_ADAPTER: TypeAdapter[HistoryItem] = TypeAdapter(HistoryItem)
_USAGE_ADAPTER: TypeAdapter[Usage] = TypeAdapter(Usage)


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

    @property
    def model_provider(self) -> str | None:
        value = self.meta.get("model_provider")
        return value if isinstance(value, str) else None


def read_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yields (line number, record) for each complete record of a rollout."""
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


def _parse_line(path: Path, number: int, raw: bytes) -> dict[str, Any]:
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


def load_rollout(path: Path) -> LoadedSession:
    """Rebuilds a thread's history and cumulative usage from its rollout."""
    meta: dict[str, Any] | None = None
    history: list[HistoryItem] = []
    usage = Usage()
    last_token_count: dict[str, Any] | None = None
    cwd: str | None = None
    settings = RunSettings()
    outcome = INCOMPLETE
    runs = 0
    awaiting_context = False
    count = 0
    file_state: list[dict[str, Any]] = []
    for number, record in read_records(path):
        count += 1
        kind, payload = record["type"], record["payload"]
        if kind == "session_meta" and meta is None:
            meta = payload
            cwd = _str_or(payload.get("cwd"), cwd)
        elif is_run_start(kind, payload):
            runs, outcome, awaiting_context = runs + 1, INCOMPLETE, True
        elif kind == "turn_context":
            cwd = _str_or(payload.get("cwd"), cwd)
            settings = settings_of(payload)
            if not awaiting_context:  # a rollout without mirrored events
                runs, outcome = runs + 1, INCOMPLETE
            awaiting_context = False
        elif kind == "event_msg" and payload.get("type") == "task_complete":
            outcome = outcome_of(payload)
        elif kind == "event_msg" and payload.get("type") == FILE_STATE:
            file_state.append(payload)
        elif kind == "response_item":
            history.append(_validate(path, number, _HISTORY_ADAPTER, payload))
        elif kind == "compacted" and isinstance(payload.get("replacement_history"), list):
            # A context compaction: the summarised history replaces everything before it.
            replacement = payload["replacement_history"]
            history = [_validate(path, number, _HISTORY_ADAPTER, item) for item in replacement]
        elif kind == "event_msg" and payload.get("type") == "token_count":
            total = payload.get("total_token_usage")
            if total is not None:
                usage = _validate(path, number, _USAGE_ADAPTER, total)
                last_token_count = payload
    if meta is None or not isinstance(meta.get("id"), str):
        raise SessionError(f"corrupt session file {path}: no session_meta record with an id")
    history, closed = repair_history(history)
    if settings.model_provider is None and isinstance(meta.get("model_provider"), str):
        # Codex records the provider in `session_meta` only: a resume continues with it.
        settings = replace(settings, model_provider=meta["model_provider"])
    return LoadedSession(
        path=path,
        thread_id=meta["id"],
        meta=meta,
        history=history,
        usage=usage,
        ordinal_count=count,
        cwd=cwd,
        last_token_count=last_token_count,
        settings=settings,
        outcome=outcome,
        runs=runs,
        closed_calls=closed,
        file_state=tuple(file_state),
    )


def _validate(path: Path, number: int, adapter: TypeAdapter[_T], value: Any) -> _T:
    try:
        return adapter.validate_python(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise SessionError(
            f"corrupt session file {path}, line {number}: {where}: {first['msg']}"
        ) from exc


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


def _provider_and_cwd(path: Path) -> tuple[str | None, str | None]:
    provider: str | None = None
    cwd: str | None = None
    seen_meta = False
    for _, record in read_records(path):
        payload = record["payload"]
        if record["type"] == "session_meta" and not seen_meta:
            seen_meta = True
            provider = _str_or(payload.get("model_provider"), None)
            cwd = _str_or(payload.get("cwd"), cwd)
        elif record["type"] == "turn_context":
            cwd = _str_or(payload.get("cwd"), cwd)
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
                preview=_first_prompt(path),
                model=loaded.settings.model,
                runs=loaded.runs,
                outcome=loaded.outcome,
            )
        )
    return infos


def _first_prompt(path: Path, limit: int = 80) -> str | None:
    """The first user message after the first `turn_context`: earlier user messages are
    the injected AGENTS.md and environment context."""
    after_context = False
    for _, record in read_records(path):
        if record["type"] == "turn_context":
            after_context = True
        elif after_context and record["type"] == "response_item":
            payload = record["payload"]
            if payload.get("kind") == "message" and payload.get("role") == "user":
                item = _HISTORY_ADAPTER.validate_python(payload)
                assert isinstance(item, Message)
                text = " ".join(item.text.split())
                return text if len(text) <= limit else text[: limit - 1] + "…"
    return None
