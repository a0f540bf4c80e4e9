"""The read-before-write state's journal (tools/fs/state.py): what a run writes to the
rollout and what a resumed run's tracker starts from."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from oiexec.tools.fs.state import FileStateTracker, ReadGate


def test_a_restored_tracker_knows_what_the_earlier_run_read(tmp_path: Path) -> None:
    read, written, unread, changed = (tmp_path / n for n in ("r.py", "w.py", "u.py", "c.py"))
    for path in (read, unread, changed):
        path.write_text("v1\n")
    journal: list[dict[str, Any]] = []
    first = FileStateTracker(journal=journal.append)
    first.record_read(read, offset=1, limit=5)
    written.write_text("new\n")
    first.record_write(written)
    first.record_read(changed)
    gone = tmp_path / "gone.py"
    gone.write_text("x")
    first.record_read(gone)
    first.forget(gone)
    assert [entry["path"] for entry in journal] == [
        str(p.resolve()) for p in (read, written, changed, gone, gone)
    ]
    assert journal[-1]["stamp"] is None

    changed.write_text("v2, changed after the run\n")
    os.utime(changed, (1, 1))
    resumed = FileStateTracker()
    assert resumed.restore(journal) == len(journal)
    assert resumed.check(read) is ReadGate.OK
    assert resumed.unchanged_since_read(read, offset=1, limit=5)
    assert resumed.check(written) is ReadGate.OK
    assert not resumed.unchanged_since_read(written)  # written, never shown by a read
    assert resumed.check(unread) is ReadGate.NOT_READ
    assert resumed.check(changed) is ReadGate.STALE
    assert not resumed.was_read(gone)


def test_entries_that_do_not_parse_leave_the_file_unread(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text("x")
    journal: list[dict[str, Any]] = []
    FileStateTracker(journal=journal.append).record_read(path)
    damaged: list[dict[str, Any]] = [
        {"path": str(path.resolve()), "stamp": {"sha256": "x"}},
        {"nothing": 1},
    ]
    tracker = FileStateTracker()
    assert tracker.restore(damaged) == 0
    assert tracker.check(path) is ReadGate.NOT_READ
    assert tracker.restore([{**journal[0], "type": "file_read_state", "extra": 1}]) == 1
    assert tracker.check(path) is ReadGate.OK
