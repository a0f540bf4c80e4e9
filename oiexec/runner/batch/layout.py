"""What a batch's output directory holds at its top level, in one place: the batch's own
files beside one directory per task (`DIR/<id>/`).

A task id is a directory name in that same namespace, so the tasks file (which is the
user's, or whoever wrote it) must never name one of these: a task called `summary.json`
would become a directory and the summary could not be written. `tasks.check_id` refuses
them, compared without case (an output directory is often copied to, or merged on, a
filesystem that does not tell `Summary.json` from `summary.json`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from oiexec.core.errors import UsageError
from oiexec.output.reportfile import ReportDir

__all__ = [
    "JUNIT_FILE",
    "RESERVED_NAMES",
    "SHARD_FILE",
    "SUMMARY_FILE",
    "open_out",
    "write_first",
]

SUMMARY_FILE = "summary.json"
JUNIT_FILE = "junit.xml"
#: Which slice of the batch this directory holds (pool.py writes it, merge.py reads it).
SHARD_FILE = "shard.json"

#: Every top-level name the batch itself writes. Temp files of the atomic writes start with
#: a dot, which no id may (tasks.check_id), so they need no entry here.
RESERVED_NAMES: frozenset[str] = frozenset({SUMMARY_FILE, JUNIT_FILE, SHARD_FILE})

_HINT = (
    "Name a directory the batch can create (with its parents) or write into, e.g. "
    "--out runs/nightly."
)


def open_out(out: Path, label: str = "--out") -> ReportDir:
    """The output directory, made if missing and held open (output/reportfile.ReportDir),
    before any task runs: `UsageError` naming `label` when it cannot hold the batch's files (a
    path under a regular file or in /proc, a name of the batch's own taken by a directory)."""
    try:
        held = ReportDir.open(out, label)
    except UsageError as exc:
        raise UsageError(exc.message, hint=_HINT) from None
    foreign = _foreign_entry(held.path)
    if foreign is not None:
        held.close()
        raise UsageError(
            f"{label} {out} holds {foreign!r} but is not a batch output directory (no "
            f"{SHARD_FILE} or {SUMMARY_FILE}): the tasks' directories would be mixed with "
            "what is there, and a task's stale files and worktree are removed before it runs",
            hint="Name a new or empty directory, or one a batch wrote (a rerun there picks up "
            "where it stopped).",
        )
    for name in sorted(RESERVED_NAMES):
        try:
            info = os.lstat(held.path / name)
        except OSError:
            continue  # missing: written later
        if not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
            held.close()
            raise UsageError(
                f"{label} {out}: {name} there is not a file (a directory?); the batch writes "
                "its own report under that name",
                hint="Remove it, or choose another output directory.",
            )
    return held


def write_first(held: ReportDir, name: str, data: str, label: str = "--out") -> None:
    """The first file the batch writes into `held`, which is also the test that it can be
    written at all (read-only filesystem, permissions): `UsageError` before any task runs."""
    try:
        held.write(name, data)
    except OSError as exc:
        held.close()
        raise UsageError(
            f"{label} {held.path}: cannot write {name} into it: {exc.strerror or exc}", hint=_HINT
        ) from None


def _foreign_entry(path: Path) -> str | None:
    """A name in `path` a task id could take, when `path` holds no batch's files; None when it
    is empty (dot-files aside: no id starts with a dot) or a batch wrote it."""
    first: str | None = None
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                if entry.name in (SHARD_FILE, SUMMARY_FILE):
                    return None
                if first is None and not entry.name.startswith("."):
                    first = entry.name
    except OSError:
        return None  # unreadable: the first write says what is wrong
    return first
