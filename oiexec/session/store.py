"""Writing rollouts: one append-only JSONL file per thread.

    $OPENINTERPRETER_HOME/sessions/YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<thread-uuid>.jsonl

Each line is `{"timestamp": "...Z", "ordinal": N, "type": T, "version": V, "payload": {...}}`
(the models and the version: `session/records.py`). Every record is checked against its model
before it is written: one that does not match is a programming error (`InvalidRecord`) and is
never written. Records are flushed one by one (a killed run leaves every finished record
readable) and fsync'd on close; every string in a payload goes through `redact` first.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from oiexec.core.errors import SessionError
from oiexec.core.redact import redact_value
from oiexec.git import QUICK_TIMEOUT, GitError, run_git_text
from oiexec.session.index import load_rollout, sessions_dir
from oiexec.session.records import ROLLOUT_VERSION, InvalidRecord, check_record

__all__ = ["NullStore", "RolloutStore", "fork_rollout", "new_thread_id", "uuid7"]

_uuid7_lock = threading.Lock()
_uuid7_last = (0, 0)


def uuid7() -> uuid.UUID:
    """A time-ordered UUID (RFC 9562 version 7). Within one millisecond the 12-bit `rand_a`
    field counts up, so ids made by one process sort in creation order."""
    global _uuid7_last
    with _uuid7_lock:
        ms = time.time_ns() // 1_000_000
        last_ms, last_seq = _uuid7_last
        if ms <= last_ms:
            ms, seq = last_ms, last_seq + 1
            if seq > 0xFFF:
                ms, seq = ms + 1, secrets.randbits(11)
        else:
            seq = secrets.randbits(11)
        _uuid7_last = (ms, seq)
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= seq << 64
    value |= 0b10 << 62
    value |= secrets.randbits(62)
    return uuid.UUID(int=value)


def new_thread_id() -> str:
    return str(uuid7())


def _utc_timestamp() -> str:
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def _git_info(cwd: Path) -> dict[str, str] | None:
    """Commit and branch of the repository around `cwd`, when there is one."""
    info: dict[str, str] = {}
    for key, args in (
        ("commit_hash", ["rev-parse", "--verify", "-q", "HEAD"]),
        ("branch", ["symbolic-ref", "-q", "--short", "HEAD"]),
    ):
        try:
            done = run_git_text(args, cwd=cwd, timeout=QUICK_TIMEOUT)
        except GitError:
            return None  # the record simply has no `git` block
        if done.returncode == 0 and done.stdout.strip():
            info[key] = done.stdout.strip()
    return info or None


class RolloutStore:
    """The rollout of one thread, open for appending. Safe to call from several threads."""

    def __init__(self, path: Path, thread_id: str, *, next_ordinal: int = 0) -> None:
        self._path = path
        self._thread_id = thread_id
        self._ordinal = next_ordinal
        self._lock = threading.Lock()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file: IO[str] | None = open(path, "a", encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            raise SessionError(f"cannot write session file {path}: {exc.strerror}") from exc

    @classmethod
    def create(
        cls,
        home: Path,
        *,
        cwd: Path,
        model_provider: str,
        originator: str = "oiexec_exec",
        cli_version: str,
        base_instructions: str | None,
        forked_from: tuple[str, int] | None = None,
        thread_id: str | None = None,
    ) -> RolloutStore:
        """Starts a new thread: a new file whose first record is `session_meta`."""
        thread_id = thread_id or new_thread_id()
        started = datetime.now()
        day = sessions_dir(home) / started.strftime("%Y/%m/%d")
        name = f"rollout-{started.strftime('%Y-%m-%dT%H-%M-%S')}-{thread_id}.jsonl"
        store = cls(day / name, thread_id)
        meta: dict[str, Any] = {
            "session_id": thread_id,
            "id": thread_id,
            "timestamp": _utc_timestamp(),
            "cwd": str(cwd),
            "originator": originator,
            "cli_version": cli_version,
            "source": "exec",
            "model_provider": model_provider,
            "base_instructions": {"text": base_instructions},
        }
        git = _git_info(cwd)
        if git:
            meta["git"] = git
        if forked_from is not None:
            meta["forked_from_id"], meta["forked_from_ordinal_exclusive"] = forked_from
        store.append("session_meta", meta)
        return store

    @classmethod
    def open_existing(cls, path: Path) -> RolloutStore:
        """Reopens a rollout to append a resumed turn; ordinals continue where they stopped."""
        loaded = load_rollout(path)
        _drop_partial_tail(path)
        return cls(path, loaded.thread_id, next_ordinal=loaded.ordinal_count)

    @property
    def thread_id(self) -> str:
        return self._thread_id

    @property
    def path(self) -> Path | None:
        return self._path

    @property
    def next_ordinal(self) -> int:
        return self._ordinal

    def append(self, record_type: str, payload: dict[str, Any]) -> None:
        """Writes one record; raises `InvalidRecord` (and writes nothing) when `payload` is not
        a `record_type` record."""
        with self._lock:
            if self._file is None:
                raise SessionError(f"session file {self._path} is closed")
            check_record(record_type, payload)
            record = {
                "timestamp": _utc_timestamp(),
                "ordinal": self._ordinal,
                "type": record_type,
                "version": ROLLOUT_VERSION,
                "payload": redact_value(payload),
            }
            line = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str)
            try:
                self._file.write(line + "\n")
                self._file.flush()
            except OSError as exc:
                raise SessionError(
                    f"cannot write session file {self._path}: {exc.strerror}"
                ) from exc
            self._ordinal += 1

    def close(self) -> None:
        with self._lock:
            if self._file is None:
                return
            file, self._file = self._file, None
            try:
                file.flush()
                os.fsync(file.fileno())
            except OSError:
                pass  # the records are already in the OS; losing fsync is not worth a crash
            finally:
                file.close()

    def __enter__(self) -> RolloutStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _drop_partial_tail(path: Path) -> None:
    """Cuts a record a killed writer left half-written, so the next append starts a line."""
    with open(path, "rb+") as file:
        data = file.read()
        if data and not data.endswith(b"\n"):
            file.truncate(data.rfind(b"\n") + 1)


class NullStore:
    """`--ephemeral`: the same interface, no file."""

    def __init__(self, thread_id: str | None = None) -> None:
        self._thread_id = thread_id or new_thread_id()

    @property
    def thread_id(self) -> str:
        return self._thread_id

    @property
    def path(self) -> Path | None:
        return None

    def append(self, record_type: str, payload: dict[str, Any]) -> None:
        # Checked all the same: a record an ephemeral run gets wrong is wrong in every run.
        check_record(record_type, payload)

    def close(self) -> None:
        pass


def _copy_event(store: RolloutStore, payload: dict[str, Any]) -> None:
    """Copies an `event_msg` of the parent verbatim. One its reader tolerated but this build
    would not write (a damaged entry, a newer oiexec's field) is left out: the tracker would
    have skipped such an entry anyway."""
    with contextlib.suppress(InvalidRecord):
        store.append("event_msg", payload)


def fork_rollout(
    home: Path,
    parent_path: Path,
    *,
    cwd: Path,
    model_provider: str,
    originator: str = "oiexec_exec",
    cli_version: str,
    base_instructions: str | None,
) -> RolloutStore:
    """A new thread that starts as a copy of the parent's history and cumulative usage."""
    parent = load_rollout(parent_path)
    store = RolloutStore.create(
        home,
        cwd=cwd,
        model_provider=model_provider,
        originator=originator,
        cli_version=cli_version,
        base_instructions=base_instructions,
        forked_from=(parent.thread_id, parent.ordinal_count),
    )
    try:
        for item in parent.history:
            store.append("response_item", item.model_dump(mode="json"))
        # The fork's model saw the parent's reads: its edits need no second read.
        for entry in parent.file_state:
            _copy_event(store, entry)
        if parent.last_token_count is not None:
            _copy_event(store, parent.last_token_count)
    except BaseException:
        store.close()
        raise
    return store
