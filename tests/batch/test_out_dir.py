"""The batch writes beneath its --out directory, opened when the batch starts: a task directory
that a task (whose sandbox reaches DIR) replaced with a link is refused, never followed, for the
task's standard streams as for every other file (output/reportfile.ReportDir)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from oiexec.runner.batch.record import read_output
from oiexec.runner.batch.task_run import BatchContext, Children, run_child
from oiexec.runner.launch import LaunchError


def test_a_task_directory_swapped_for_a_link_gets_no_output_files(tmp_path: Path) -> None:
    out, marker = tmp_path / "runs", tmp_path / "marker"
    marker.mkdir()
    ctx = BatchContext(out=out, options=(), timeout_s=None, children=Children(), env={})
    try:
        os.symlink(marker, out / "t2")  # planted by another task before t2 starts
        with pytest.raises(LaunchError, match="cannot open the task's output files"):
            run_child(["exec", "-"], "p", ctx, out / "t2", timeout=None, append=False)
    finally:
        ctx.out_dir.close()
    assert list(marker.iterdir()) == []


def test_task_files_are_read_without_following_links_out_or_hanging(tmp_path: Path) -> None:
    """What the batch reads back from a task's directory (its events, JUnit, result, base
    commit) is read as anything a task may have replaced: no link out, no FIFO, bounded."""
    out = tmp_path / "runs"
    (out / "t1").mkdir(parents=True)
    secret = tmp_path / "secret.json"
    secret.write_text('{"type": "turn.failed", "error": {"message": "SECRET"}}\n')
    (out / "t1" / "events.jsonl").symlink_to(secret)
    os.mkfifo(out / "t1" / "junit.xml")
    (out / "t1" / "result.json").write_text("{}")
    assert read_output(out, out / "t1" / "events.jsonl") is None
    assert read_output(out, out / "t1" / "junit.xml") is None
    assert read_output(out, out / "t1" / "result.json") == b"{}"
    assert read_output(out, out / "t1" / "result.json", max_bytes=1) is None
