"""Read-before-write tracking: which files the model has seen, and whether they changed since.

Some harnesses refuse to edit or overwrite a file the model has not read (or that changed after
the read), and some reply to an unchanged re-read with a short note instead of the same text
again. One tracker per run holds what that needs.

The model's memory of a file outlives the run: its history still holds the read when the
session is resumed. So every change to the tracker is handed to a journal (the runner writes
it to the rollout), and a resumed run's tracker starts from the journal's entries: a file read
before the resume may be edited at once, one changed since is still refused as stale, and one
never read is still refused.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from oiexec.sandbox.reader import ReadScope, read_file

#: Receives one journal entry, `{"path": ..., "stamp": {...} | None}`, per tracker change.
Journal = Callable[[dict[str, Any]], None]


class ReadGate(Enum):
    """Whether a write to an existing file may go ahead."""

    OK = "ok"
    NEW_FILE = "new_file"
    NOT_READ = "not_read"
    STALE = "stale"


@dataclass(frozen=True)
class FileStamp:
    """What a file looked like when last read or written by a tool."""

    mtime_ns: int
    sha256: str
    window: tuple[int | None, int | None] = (None, None)
    #: Stamped by a write: the model knows the text, but has not been shown it by a read,
    #: so a read that follows is answered in full (Claude Code does so after Write/Edit).
    written: bool = False


def _key(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _stamp(path: Path, window: tuple[int | None, int | None]) -> FileStamp | None:
    # Through the one reader, bounded: a FIFO or device planted at the path is no file to
    # stamp, and hashing must not read without end.
    try:
        data = read_file(ReadScope(), path).data
        mtime = path.stat().st_mtime_ns
    except OSError:
        return None
    return FileStamp(mtime, hashlib.sha256(data).hexdigest(), window)


class _StampEntry(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    mtime_ns: int
    sha256: str
    window: tuple[int | None, int | None] = (None, None)
    written: bool = False


class _JournalEntry(BaseModel):
    """One journal entry as the rollout keeps it; `stamp` None forgets the path."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    path: str
    stamp: _StampEntry | None


class FileStateTracker:
    """Path -> stamp at last read. Paths are compared after resolving symlinks."""

    def __init__(self, journal: Journal | None = None) -> None:
        self._stamps: dict[Path, FileStamp] = {}
        self._journal = journal

    def restore(self, entries: Iterable[Mapping[str, Any]]) -> int:
        """Replays journal entries of an earlier run of the thread, in order; an entry that
        does not parse (a foreign or damaged rollout) is skipped, leaving that file unread
        (the safe side: the model reads it again). Returns how many entries applied."""
        applied = 0
        for raw in entries:
            try:
                entry = _JournalEntry.model_validate(raw)
            except ValidationError:
                continue
            key = Path(entry.path)
            if entry.stamp is None:
                self._stamps.pop(key, None)
            else:
                stamp = entry.stamp
                self._stamps[key] = FileStamp(
                    stamp.mtime_ns, stamp.sha256, stamp.window, stamp.written
                )
            applied += 1
        return applied

    def _set(self, key: Path, stamp: FileStamp | None) -> None:
        if stamp is None:
            self._stamps.pop(key, None)
        else:
            self._stamps[key] = stamp
        if self._journal is not None:
            entry = None
            if stamp is not None:
                entry = {
                    "mtime_ns": stamp.mtime_ns,
                    "sha256": stamp.sha256,
                    "window": list(stamp.window),
                    "written": stamp.written,
                }
            self._journal({"path": str(key), "stamp": entry})

    def record_read(
        self, path: Path, *, offset: int | None = None, limit: int | None = None
    ) -> None:
        """Note that the model has just seen `path` (through the given window)."""
        stamp = _stamp(path, (offset, limit))
        if stamp is not None:
            self._set(_key(path), stamp)

    def record_write(self, path: Path) -> None:
        """A tool wrote `path`: the model knows its content, as after a full read (but a
        read that follows is not an unchanged re-read)."""
        stamp = _stamp(path, (None, None))
        if stamp is not None:
            self._set(_key(path), FileStamp(stamp.mtime_ns, stamp.sha256, written=True))

    def forget(self, path: Path) -> None:
        if _key(path) in self._stamps:
            self._set(_key(path), None)

    def was_read(self, path: Path) -> bool:
        return _key(path) in self._stamps

    def check(self, path: Path) -> ReadGate:
        """May a tool write `path` now? New files always may."""
        if not path.exists():
            return ReadGate.NEW_FILE
        seen = self._stamps.get(_key(path))
        if seen is None:
            return ReadGate.NOT_READ
        now = _stamp(path, seen.window)
        if now is None:
            return ReadGate.NOT_READ
        # A touched but identical file is not stale: editors and formatters often do that.
        if now.mtime_ns != seen.mtime_ns and now.sha256 != seen.sha256:
            return ReadGate.STALE
        return ReadGate.OK

    def unchanged_since_read(
        self, path: Path, *, offset: int | None = None, limit: int | None = None
    ) -> bool:
        """True when the same window of `path` was read before and the file is unchanged,
        so a harness can reply with its "unchanged" note instead of the text."""
        seen = self._stamps.get(_key(path))
        if seen is None or seen.written or seen.window != (offset, limit):
            return False
        now = _stamp(path, seen.window)
        return now is not None and now.sha256 == seen.sha256
