from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from oiexec.core.errors import ToolInputError
from oiexec.core.policy import SandboxPolicy
from oiexec.harness.styles.claude import STATE_CURRENT, ClaudeStyle
from oiexec.harness.styles.opencode import OpencodeStyle
from oiexec.sandbox.paths import write_denial
from oiexec.tools.fs.state import FileStateTracker, ReadGate
from oiexec.tools.fs.write import write_file


def allow_all(path: Path) -> str | None:
    return None


def deny_all(path: Path) -> str | None:
    return f"{path}: writes are not allowed in the read-only sandbox"


def test_create_overwrite_append(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "dir" / "a.txt"
    created = write_file(path, "one", can_write=allow_all)
    assert created.created and path.read_text() == "one"
    assert ClaudeStyle().written(created) == f"File created successfully at: {path}{STATE_CURRENT}"
    over = write_file(path, "two\r\n", can_write=allow_all)
    assert not over.created and over.before == "one" and path.read_bytes() == b"two\r\n"
    write_file(path, "three", can_write=allow_all, mode="append")
    assert path.read_bytes() == b"two\r\nthree"


def test_create_refuses_existing_and_directories(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("keep")
    with pytest.raises(ToolInputError, match="already exists") as info:
        write_file(path, "x", can_write=allow_all, must_not_exist=True)
    assert info.value.kind == "exists" and path.read_text() == "keep"
    with pytest.raises(ToolInputError, match="is a directory"):
        write_file(tmp_path, "x", can_write=allow_all)
    with pytest.raises(ToolInputError, match="Parent directory"):
        write_file(tmp_path / "no" / "x.txt", "x", can_write=allow_all, create_parents=False)


def test_real_sandbox_guard_refuses_with_its_reason(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    policy = SandboxPolicy(
        mode="workspace-write", cwd=workspace, exclude_slash_tmp=True, exclude_tmpdir_env_var=True
    )
    guard = lambda p: write_denial(policy, p)  # noqa: E731
    write_file(workspace / "ok.txt", "fine", can_write=guard)
    outside = tmp_path / "outside.txt"
    with pytest.raises(ToolInputError, match="outside the writable roots"):
        write_file(outside, "no", can_write=guard)
    assert not outside.exists()
    with pytest.raises(ToolInputError, match=r"\.git is read-only"):
        write_file(workspace / ".git" / "config", "no", can_write=guard)


def test_symlink_target_is_rewritten(tmp_path: Path) -> None:
    target = tmp_path / "real.txt"
    target.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    write_file(link, "new", can_write=allow_all)
    assert link.is_symlink() and target.read_text() == "new"


def test_tracker_read_before_write(tmp_path: Path) -> None:
    tracker = FileStateTracker()
    path = tmp_path / "a.py"
    assert tracker.check(path) is ReadGate.NEW_FILE
    path.write_text("v1")
    assert tracker.check(path) is ReadGate.NOT_READ
    assert ClaudeStyle().read_gate(ReadGate.NOT_READ, path) == (
        "File has not been read yet. Read it first before writing to it."
    )
    tracker.record_read(path)
    assert tracker.check(path) is ReadGate.OK
    assert ClaudeStyle().read_gate(ReadGate.OK, path) is None
    # Same bytes with a new mtime is not stale; new content is.
    later = time.time() + 5
    os.utime(path, (later, later))
    assert tracker.check(path) is ReadGate.OK
    path.write_text("v2")
    os.utime(path, (later + 5, later + 5))
    assert tracker.check(path) is ReadGate.STALE
    assert f"{path} has changed on disk" in (OpencodeStyle().read_gate(ReadGate.STALE, path) or "")
    tracker.record_write(path)
    assert tracker.check(path) is ReadGate.OK


def test_tracker_unchanged_reread(tmp_path: Path) -> None:
    tracker = FileStateTracker()
    path = tmp_path / "a.py"
    path.write_text("x\n")
    assert not tracker.unchanged_since_read(path)
    tracker.record_read(path, offset=1, limit=10)
    assert tracker.unchanged_since_read(path, offset=1, limit=10)
    assert not tracker.unchanged_since_read(path)  # a different window
    path.write_text("y\n")
    assert not tracker.unchanged_since_read(path, offset=1, limit=10)
    # Paths are compared after resolving symlinks.
    link = tmp_path / "l.py"
    link.symlink_to(path)
    tracker.record_read(path)
    assert tracker.was_read(link)
