"""`batch merge` reads directories a batch wrote, which its tasks could also write: a summary
of the wrong shape, an id that would leave the merged directory or take one of its report
names, a task file that is a FIFO, not XML or huge: each is a usage error naming the file and
entry, or a file left out with a warning; never an internal error, never a hang."""

from __future__ import annotations

import json
import os
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from oiexec.core.errors import UsageError
from oiexec.runner.batch.merge import merge_batches
from tests.conftest import run_cli


def _entry(task_id: str, **fields: Any) -> dict[str, Any]:
    return {"index": 0, "id": task_id, "status": "success", "exit_code": 0, **fields}


def _shard(path: Path, tasks: list[Any], **summary: Any) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    data = {"batch": "b", "exit_code": 0, "totals": {}, "tasks": tasks, **summary}
    (path / "summary.json").write_text(json.dumps(data))
    return path


_BAD_ENTRIES = [
    ("not an object", "x", "task 1: the entry: Input should be a dictionary"),
    ("tokens a list", _entry("a", tokens=[1]), "task 1: tokens: Input should be"),
    ("index a word", _entry("a", index="first"), "task 1: index: Input should be a valid integer"),
    ("id escapes", _entry("../../etc"), "task 1: id '../../etc' cannot be used"),
    ("id is a report", _entry("summary.json"), "task 1: id 'summary.json' cannot be used"),
    ("id not a string", _entry(None), "task 1: id: Input should be a valid string"),
    ("unknown status", _entry("a", status="great"), "task 1: unknown status 'great'"),
    (
        "session id an option",
        _entry("a", session_id="--sandbox=danger-full-access"),
        "task 1: session_id '--sandbox=danger-full-access' is not a session id",
    ),
    (
        "duration nan",
        _entry("a", duration_s=float("nan")),
        "task 1: duration_s: expected a finite number of seconds >= 0",
    ),
]


@pytest.mark.parametrize(
    ("case", "entry", "message"), _BAD_ENTRIES, ids=[c[0] for c in _BAD_ENTRIES]
)
def test_a_summary_entry_of_the_wrong_shape_is_a_usage_error_naming_it(
    tmp_path: Path, case: str, entry: Any, message: str
) -> None:
    shard = _shard(tmp_path / "s0", [entry])
    with pytest.raises(UsageError) as caught:
        merge_batches([shard], tmp_path / "merged")
    assert f"{shard / 'summary.json'}: {message}" in caught.value.render()
    assert not (tmp_path / "merged").exists()
    assert not (tmp_path / "etc").exists()


@pytest.mark.parametrize(
    "content",
    [b"[" * 100_000, b"\xff\xfe", b"[]", b'{"tasks": 5}', b"NaN"],
    ids=["deep", "not utf-8", "a list", "tasks not a list", "nan"],
)
def test_a_summary_that_is_not_a_batch_summary_is_a_usage_error(
    tmp_path: Path, content: bytes
) -> None:
    shard = tmp_path / "s0"
    shard.mkdir()
    (shard / "summary.json").write_bytes(content)
    with pytest.raises(UsageError, match=r"summary\.json"):
        merge_batches([shard], tmp_path / "merged")


def test_odd_task_files_are_copied_or_left_out_with_a_warning_never_hang(tmp_path: Path) -> None:
    shard = _shard(tmp_path / "s0", [_entry("a")])
    (shard / "shard.json").write_text(json.dumps({"batch_tasks": ["a", "../x", 7, "junit.xml"]}))
    task = shard / "a"
    task.mkdir()
    (task / "junit.xml").write_bytes(b"\x00not xml at all<<<")
    os.mkfifo(task / "events.jsonl")  # nobody writes it: a read would block forever
    (task / "stderr.log").symlink_to(tmp_path / "secret")
    (tmp_path / "secret").write_text("SECRET")
    warnings: list[str] = []
    started = time.monotonic()
    code = merge_batches([shard], tmp_path / "merged", warn=warnings.append)
    assert time.monotonic() - started < 10
    assert code == 0
    merged = tmp_path / "merged"
    assert (merged / "a" / "junit.xml").read_bytes() == b"\x00not xml at all<<<"
    assert not (merged / "a" / "events.jsonl").exists()
    assert not (merged / "a" / "stderr.log").exists()
    assert any("not copied" in w and "events.jsonl" in w for w in warnings), warnings
    assert any("not copied" in w and "stderr.log" in w for w in warnings), warnings
    # The shard file's odd ids are not turned into tasks of the merge.
    assert [t["id"] for t in json.loads((merged / "summary.json").read_text())["tasks"]] == ["a"]


def test_merge_cli_says_what_is_wrong_without_a_traceback(tmp_path: Path) -> None:
    shard = _shard(tmp_path / "s0", [_entry("../../escape")])
    planted = _shard(tmp_path / "s1", [_entry("b")])
    result = run_cli(
        ["batch", "merge", str(shard), "--out", str(tmp_path / "merged")], cwd=tmp_path
    )
    assert result.returncode == 2, result.stderr
    assert "task 1: id '../../escape' cannot be used as a directory name" in result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    result = run_cli(["batch", "merge", str(planted), "--out", "/proc/merged"], cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "--out /proc/merged: cannot create or open its directory" in result.stderr


def test_merge_cli_says_what_it_merged_and_where_it_wrote_it(tmp_path: Path) -> None:
    s0 = _shard(tmp_path / "s0", [_entry("a"), _entry("b", index=2, status="failed")])
    s1 = _shard(tmp_path / "s1", [_entry("c", index=1)])
    (s0 / "shard.json").write_text(json.dumps({"batch_tasks": ["a", "c", "b", "d"]}))
    out = tmp_path / "merged"
    result = run_cli(["batch", "merge", str(s0), str(s1), "--out", str(out)], cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    lines = result.stderr.splitlines()
    assert "batch merge: merged 4 task(s) from 2 directories (2 success, 1 failed, 1 missing)" in (
        lines
    ), result.stderr
    assert f"batch merge: wrote {out / 'summary.json'} and {out / 'junit.xml'}" in lines
    assert (out / "summary.json").is_file() and (out / "junit.xml").is_file()
    # A merge that writes nothing does not claim it did.
    again = run_cli(["batch", "merge", str(s0), str(s0), "--out", str(out)], cwd=tmp_path)
    assert again.returncode == 2 and "batch merge: merged" not in again.stderr


_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.just(1e308),
    st.text(st.characters() | st.characters(categories=["Cs"]), max_size=10),
    st.sampled_from(["success", "failed", "missing", "a", "../x", "summary.json"]),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=3),
)
_FIELDS = ["index", "id", "status", "exit_code", "message", "turns", "tokens", "duration_s"]
_ENTRIES = st.lists(
    st.fixed_dictionaries(
        {
            "index": st.integers(0, 5),
            "id": st.sampled_from(["a", "b", "c"]),
            "status": st.just("success"),
        },
        optional={key: _VALUES for key in [*_FIELDS[3:], "session_id", "paths", "attempts", "x"]},
    ).flatmap(
        lambda entry: (
            st.just(entry)
            | st.sampled_from(_FIELDS[:3]).flatmap(
                lambda key: _VALUES.map(lambda value: {**entry, key: value})
            )
        )
    )
    | _VALUES,
    max_size=4,
)


@given(entries=_ENTRIES, batch=_VALUES)
@example(
    entries=[
        {"index": 0, "id": "a", "status": "success", "duration_s": 1e308},
        {"index": 1, "id": "b", "status": "success", "duration_s": 1e308},
    ],
    batch="b",
)
def test_any_summary_merges_or_is_a_usage_error(entries: list[Any], batch: Any) -> None:
    """Property: whatever a shard's summary.json holds, merge writes valid reports and
    returns a batch exit code, or raises the usage error; nothing else."""
    with tempfile.TemporaryDirectory() as tmp:
        shard = _shard(Path(tmp) / "s0", entries, batch=batch)
        try:
            code = merge_batches([shard], Path(tmp) / "merged")
        except UsageError:
            return
        assert code in (0, 1, 130)
        merged = Path(tmp) / "merged"
        json.loads((merged / "summary.json").read_text(), parse_constant=_no_constant)
        ElementTree.fromstring((merged / "junit.xml").read_bytes())


def _no_constant(name: str) -> None:
    raise AssertionError(f"{name} in the merged summary: not JSON")


def test_a_result_a_task_could_have_rewritten_is_not_trusted_on_a_rerun(tmp_path: Path) -> None:
    """On a rerun the batch reads each task's result.json back (skip it, or resume its session
    with --retry-failed). One that is not what a run writes runs the task again instead: a
    session id that is an option would otherwise reach `exec resume`'s command line, a token
    count that is text would fail the reports after every task ran."""
    from oiexec.runner.batch.record import read_record

    good = {**_entry("a", status="failed"), "session_id": "01a23cfb-ff0a-75ea-840a-73eec0d9ef9e"}
    bad = [
        {**good, "session_id": "--sandbox=danger-full-access"},
        {**good, "tokens": {"input": "many"}},
        {**good, "duration_s": 1e308},
        {**good, "id": "../b"},
        [good],
    ]
    (tmp_path / "a").mkdir()
    path = tmp_path / "a" / "result.json"
    path.write_text(json.dumps(good))
    record = read_record(tmp_path, path)
    assert record is not None and record.session_id == good["session_id"]
    for data in bad:
        path.write_text(json.dumps(data))
        assert read_record(tmp_path, path) is None, data


def test_a_planted_base_commit_never_reaches_git_as_an_option(tmp_path: Path) -> None:
    """A resumed task's diff starts from the commit in `DIR/<id>/.base`, which other tasks may
    write: only a commit id is taken (`--index-output=...` would make git write a file)."""
    from oiexec.git import GitError
    from oiexec.runner.batch.task_run import _base_of

    (tmp_path / "a").mkdir()
    base = tmp_path / "a" / ".base"
    base.write_text("0123456789abcdef0123456789abcdef01234567\n")
    assert _base_of(tmp_path, tmp_path / "a") == "0123456789abcdef0123456789abcdef01234567"
    for planted in (
        "--index-output=/tmp/x\n",
        "HEAD\n",
        "",
        "0123456789abcdef0123456789abcdef0123456\n",
    ):
        base.write_text(planted)
        with pytest.raises(GitError, match="base commit"):
            _base_of(tmp_path, tmp_path / "a")


def test_a_task_directory_that_is_a_link_is_not_followed_into_the_merge(tmp_path: Path) -> None:
    """A task (whose sandbox reaches DIR) can replace its own directory with a link to what the
    runner may read: merge copied the link's target (say ~/.ssh) into the merged reports."""
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "id_ed25519").write_text("PRIVATE KEY")
    shard = _shard(tmp_path / "s0", [_entry("a"), {**_entry("b"), "index": 1}])
    (shard / "a").mkdir()
    (shard / "a" / "events.jsonl").write_text("{}\n")
    (shard / "a" / "inner").symlink_to(secrets)  # a link one level down: same
    (shard / "b").symlink_to(secrets)
    warnings: list[str] = []
    assert merge_batches([shard], tmp_path / "merged", warn=warnings.append) == 0
    merged = tmp_path / "merged"
    assert (merged / "a" / "events.jsonl").read_text() == "{}\n"
    assert "PRIVATE KEY" not in "".join(
        p.read_text() for p in merged.rglob("*") if p.is_file() and not p.is_symlink()
    )
    assert any(f"{shard / 'b'} is a symbolic link" in w for w in warnings), warnings
