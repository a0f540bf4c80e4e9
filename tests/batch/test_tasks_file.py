"""A bad tasks file is refused before anything runs (exit 2), naming the line and what to
fix; TOML `[[tasks]]` takes the same keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from oiexec.core.errors import UsageError
from oiexec.runner.batch.tasks import load_tasks
from tests.conftest import run_cli

_GOOD = '{"id": "a", "prompt": "do a"}'

_BAD_JSONL = [
    ("bad json", [_GOOD, '{"id": "b", "prompt": '], "tasks.jsonl:2: bad JSON"),
    (
        "duplicate id",
        [_GOOD, '{"id": "b", "prompt": "x"}', '{"id": "a", "prompt": "again"}'],
        "tasks.jsonl:3: duplicate id 'a' (first used at tasks.jsonl:1)",
    ),
    (
        "unknown key",
        [_GOOD, '{"id": "b", "prompt": "x", "modle": "gpt"}'],
        "tasks.jsonl:2: unknown key 'modle'; known keys: id, prompt, repo, ref",
    ),
    ("missing prompt", ['{"id": "a"}'], "tasks.jsonl:1: missing `prompt`"),
    ("empty prompt", ['{"id": "a", "prompt": "  "}'], "tasks.jsonl:1: `prompt` is empty"),
    (
        "bad type",
        ['{"id": "a", "prompt": "x", "max_turns": "3"}'],
        "tasks.jsonl:1: `max_turns` must be a positive integer, not a string",
    ),
    (
        "id not a directory name",
        ['{"id": "../escape", "prompt": "x"}'],
        "tasks.jsonl:1: id '../escape' cannot be used as a directory name",
    ),
    ("not an object", ['["a"]'], "tasks.jsonl:1: a task must be an object"),
    (
        "bad sandbox",
        ['{"id": "a", "prompt": "x", "sandbox": "open"}'],
        "`sandbox` must be one of read-only, workspace-write, danger-full-access",
    ),
]


@pytest.mark.parametrize(("case", "lines", "message"), _BAD_JSONL, ids=[c[0] for c in _BAD_JSONL])
def test_bad_jsonl_names_the_line(
    tmp_path: Path, case: str, lines: list[str], message: str
) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(UsageError) as caught:
        load_tasks(path)
    assert message in caught.value.render()
    assert "Nothing was run" in caught.value.render()


def test_cli_refuses_a_bad_file_before_running_anything(repo: Path, tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(_GOOD + "\n" + '{"id": "b", "prompt": "x", "modle": "gpt"}\nnot json\n')
    result = run_cli(["batch", str(path), "--out", str(tmp_path / "out")], cwd=repo)
    assert result.returncode == 2
    assert "tasks.jsonl:2: unknown key 'modle'" in result.stderr
    assert "tasks.jsonl:3: bad JSON" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_cli_refuses_unknown_repos_and_refs_before_running_anything(
    repo: Path, tmp_path: Path
) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(
        '{"id": "a", "prompt": "x", "ref": "no-such-branch"}\n'
        f'{{"id": "b", "prompt": "x", "repo": "{tmp_path / "missing"}"}}\n'
    )
    result = run_cli(["batch", str(path), "--out", str(tmp_path / "out")], cwd=repo)
    assert result.returncode == 2, result.stderr
    assert "task 'a': 'no-such-branch' is not a commit" in result.stderr
    assert "task 'b': repo" in result.stderr and "is not a directory" in result.stderr
    assert not (tmp_path / "out").exists()


def test_cli_refuses_per_task_exec_options(repo: Path, tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(_GOOD + "\n")
    result = run_cli(
        ["batch", str(path), "--out", str(tmp_path / "out"), "--diff", "x.patch"], cwd=repo
    )
    assert result.returncode == 2
    assert "--diff (written to DIR/<id>/diff.patch)" in result.stderr


def test_toml_tasks_take_the_same_keys_and_name_the_task(tmp_path: Path) -> None:
    path = tmp_path / "tasks.toml"
    path.write_text(
        '[[tasks]]\nid = "a"\nprompt = "do a"\nmax_turns = 3\ntimeout = 60\n\n'
        '[[tasks]]\nid = "b"\nprompt = "do b"\nsandbox = "read-only"\n'
    )
    tasks = load_tasks(path)
    assert [(t.index, t.id, t.max_turns, t.timeout, t.sandbox) for t in tasks] == [
        (0, "a", 3, 60.0, None),
        (1, "b", None, None, "read-only"),
    ]
    path.write_text('[[tasks]]\nid = "a"\nprompt = "x"\n\n[[tasks]]\nid = "b"\nrepo = 5\n')
    with pytest.raises(UsageError) as caught:
        load_tasks(path)
    text = caught.value.render()
    assert "tasks.toml: task 2 (line 5): missing `prompt`" in text
    assert "`repo` must be a string (a local path or a git URL), not an integer" in text
