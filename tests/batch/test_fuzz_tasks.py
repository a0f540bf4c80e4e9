"""Property: whatever a tasks file holds (JSONL or TOML, any keys, types, nesting, huge or odd
values, bytes that are not UTF-8, blank lines, a BOM), loading it either returns tasks that
are safe to run or raises the documented usage error, every problem named by file and line;
never another exception, and in bounded time. The loader is tested in-process (fast); the
worst cases also go through the real CLI."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from oiexec.core.errors import UsageError
from oiexec.core.numbers import COUNT, SECONDS
from oiexec.runner.batch.tasks import KNOWN_KEYS, Task, check_id, parse_tasks
from tests.batch.conftest import run_batch, statuses, write_tasks
from tests.support.model_server import ModelServer, reply

#: Seconds one file may take to load (~ms in practice; generous for a loaded 2-core machine).
_BOUND_S = 5.0

# Any character, lone surrogates (which JSON can spell as \\ud800) and the awkward ones often.
_CHARS = st.one_of(
    st.characters(),
    st.characters(categories=["Cs"]),
    st.sampled_from("\x00\n\r\t\x1b\x7f\u2028\u0085\ufeff/\\.:"),
)
_ANY_TEXT = st.text(_CHARS, max_size=40)
_ODD_STRINGS = st.sampled_from(
    [
        "",
        " ",
        "summary.json",
        "JUNIT.XML",
        "shard.json",
        "a\n",
        ".",
        "..",
        "../x",
        "a/b",
        "a\x00b",
        "\ud800",
        "x\u2028y",
        "\ufeff",
        "-rf",
        "a" * 129,
    ]
)
# Huge values, built in a map so that reports show the strategy, not megabytes of it.
_HUGE = st.one_of(
    st.integers(100_000, 300_000).map(lambda size: "x" * size),
    st.integers(300, 4000).map(lambda digits: 10**digits),
    st.integers(300, 4000).map(lambda digits: -(10**digits)),
)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    _ANY_TEXT,
    _ODD_STRINGS,
    _HUGE,
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_ANY_TEXT, inner, max_size=3),
    max_leaves=8,
)
_IDS = st.one_of(
    st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,130}", fullmatch=True), _ODD_STRINGS, _ANY_TEXT
)
_TASKS = st.fixed_dictionaries(
    {},
    optional={
        "id": _IDS | _JSON,
        "prompt": _ANY_TEXT | _ODD_STRINGS | _JSON,
        **{key: _JSON for key in KNOWN_KEYS if key not in ("id", "prompt")},
        "timeout": st.floats(allow_nan=True, allow_infinity=True) | st.integers() | _JSON,
        "max_turns": st.integers(min_value=-(10**30), max_value=10**30) | _JSON,
        "sandbox": st.sampled_from(["read-only", "workspace-write", "open"]) | _JSON,
    },
).flatmap(
    lambda task: (
        st.just(task)
        | st.dictionaries(_ANY_TEXT, _JSON, max_size=2).map(lambda extra: {**task, **extra})
    )
)

# Tasks that should load (unless their id repeats): the common case, odd only in their text.
_GOOD_TASKS = st.fixed_dictionaries(
    {
        "id": st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,20}", fullmatch=True),
        "prompt": st.text(st.characters(), max_size=30).map(lambda text: text + " go"),
    },
    optional={
        "max_turns": st.integers(1, 10**6),
        "timeout": st.floats(0.001, 1e9) | st.integers(1, 10**9),
        "sandbox": st.sampled_from(["read-only", "workspace-write", "danger-full-access"]),
        "model": st.text(st.characters(exclude_characters="\x00"), max_size=10),
        "check": st.text(st.characters(exclude_characters="\x00"), max_size=10),
    },
)


@st.composite
def _mutant(draw: st.DrawFn) -> dict[str, Any]:
    """A good task with one key's value odd: one bad value alone in a file that is otherwise
    fine is what finds a loader that lets it through."""
    task = draw(_GOOD_TASKS)
    key = draw(st.sampled_from(KNOWN_KEYS))
    task[key] = draw(_ODD_STRINGS | _HUGE | _SCALARS)
    return task


@st.composite
def _jsonl_line(draw: st.DrawFn, clean: bool) -> str:
    # A clean file has no line that is wrong whatever its values, so an odd value is the
    # only thing that can make it fail (or wrongly pass).
    kinds = ["good", "good", "mutant", "blank"]
    kind = draw(st.sampled_from(kinds if clean else [*kinds, "task", "value", "junk"]))
    if kind in ("good", "mutant"):
        task = draw(_GOOD_TASKS if kind == "good" else _mutant())
        return json.dumps(task, ensure_ascii=draw(st.booleans()))
    if kind == "task":
        return json.dumps(draw(_TASKS), ensure_ascii=draw(st.booleans()))
    if kind == "value":
        return json.dumps(draw(_JSON), ensure_ascii=draw(st.booleans()))
    if kind == "blank":
        return draw(st.sampled_from(["", " ", "\t", "\r", "# a comment"]))
    return draw(_ANY_TEXT)


def _encode(text: str) -> bytes:
    # Lone surrogates become the bytes they would be in UTF-8: not UTF-8 (a decode error).
    return text.encode("utf-8", errors="surrogatepass")


@st.composite
def _jsonl_file(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(_jsonl_line(clean=draw(st.booleans())), max_size=6))
    raw = _encode(draw(st.sampled_from(["\n", "\r\n"])).join(lines))
    if draw(st.booleans()):
        raw = b"\xef\xbb\xbf" + raw
    if draw(st.integers(0, 4)) == 0:  # now and then, bytes that are not UTF-8 somewhere
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + draw(st.binary(min_size=1, max_size=4)) + raw[at:]
    return raw


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value == math.inf else repr(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return (
            "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
        )
    return json.dumps("" if value is None else value)  # a basic string (JSON escapes)


@st.composite
def _toml_file(draw: st.DrawFn) -> bytes:
    parts: list[str] = []
    kinds = ["good", "good", "mutant"]
    if not draw(st.booleans()):
        kinds += ["table", "junk", "top"]
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(kinds))
        if kind in ("good", "mutant", "table"):
            task = draw({"good": _GOOD_TASKS, "mutant": _mutant(), "table": _TASKS}[kind])
            body = "".join(f"{json.dumps(k)} = {_toml_value(v)}\n" for k, v in task.items())
            parts.append("[[tasks]]\n" + body)
        elif kind == "top":
            parts.append(f"{json.dumps(draw(_ANY_TEXT))} = {_toml_value(draw(_JSON))}\n")
        else:
            parts.append(draw(_ANY_TEXT) + "\n")
    return _encode("\n".join(parts))


def _check(path: Path, raw: bytes) -> None:
    """The property, for one file."""
    started = time.monotonic()
    try:
        tasks = parse_tasks(path, raw)
    except UsageError as exc:
        event("refused")
        _check_message(path, exc.message)
    else:
        event("loaded")
        _check_tasks(tasks)
    assert time.monotonic() - started < _BOUND_S


def _check_message(path: Path, message: str) -> None:
    if message.startswith(f"{path} is not UTF-8 (line "):
        return
    head, *problems = message.split("\n")
    assert head == f"invalid tasks file {path}:"
    assert problems
    for problem in problems:  # each names the file, and the line for JSONL
        assert problem.startswith(f"  {path.name}") or problem.startswith("  ... and "), problem
        if path.suffix != ".toml" and "no tasks found" not in problem:
            assert problem.startswith((f"  {path.name}:", "  ... and ")), problem
        assert len(problem) < 1000  # an odd value is cut short, not repeated whole


def _check_tasks(tasks: list[Task]) -> None:
    assert tasks
    assert len({task.id.lower() for task in tasks}) == len(tasks)
    for position, task in enumerate(tasks):
        assert task.index == position
        assert check_id(task.id) is None
        for key in KNOWN_KEYS:
            value = getattr(task, key)
            if isinstance(value, str):
                value.encode("utf-8")  # no lone surrogate
                assert "\x00" not in value
            elif isinstance(value, bool):  # require_change
                assert key == "require_change"
            elif isinstance(value, int | float):  # as exec's --max-turns and --timeout take
                assert (COUNT if key == "max_turns" else SECONDS).problem(value) is None
            elif isinstance(value, tuple):  # from_junit: absolute paths, each usable
                assert key == "from_junit" and value
                for path in value:
                    path.encode("utf-8")
                    assert "\x00" not in path and path.startswith("/")
        # The reports of a `from_junit` task hold its instructions.
        assert task.prompt.strip() or task.from_junit


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example])
@given(raw=_jsonl_file(), suffix=st.sampled_from([".jsonl", ".json", ".txt", ""]))
# Found by this search (each was an internal error or an unsafe task before):
@example(raw=b'{"id": "summary.json", "prompt": "p"}', suffix=".jsonl")
@example(raw=b'{"id": "a\\n", "prompt": "p"}', suffix=".jsonl")  # `$` matched before "\n"
@example(raw=b'{"id": "A", "prompt": "p"}\n{"id": "a", "prompt": "p"}', suffix=".jsonl")
@example(raw=_encode('{"id": "a", "prompt": "x\u2028y"}'), suffix=".jsonl")  # splitlines cut it
@example(raw=b"[" * 100_000, suffix=".jsonl")  # RecursionError
@example(raw=b'{"id": "a", "prompt": "p", "max_turns": 1' + b"0" * 5000 + b"}", suffix="")
@example(raw=b'{"id": "a", "prompt": "p", "timeout": NaN}', suffix=".jsonl")
@example(raw=b'{"id": "a", "prompt": "p", "timeout": 1e999}', suffix=".jsonl")
@example(raw=b'{"id": "a", "prompt": "p", "timeout": 1' + b"0" * 400 + b"}", suffix=".jsonl")
@example(raw=b'{"id": "a", "prompt": "\\ud800"}', suffix=".jsonl")  # UnicodeEncodeError later
@example(raw=b'{"id": "a", "prompt": "p", "repo": "x\\u0000"}', suffix=".jsonl")
@example(raw=b"\xef\xbb\xbf\r\n\n" + b"x\n" * 10_000, suffix=".jsonl")
def test_any_jsonl_file_loads_or_is_a_usage_error_naming_the_line(raw: bytes, suffix: str) -> None:
    _check(Path("/tasks/t" + suffix), raw)


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example])
@given(raw=_toml_file())
@example(raw=b"tasks = " + b"[" * 100_000)  # RecursionError
@example(raw=b"x = " + b"{a=" * 100_000)
@example(raw=b'[[tasks]]\nid = "a"\nprompt = "p"\nmax_turns = 1' + b"0" * 5000 + b"\n")
@example(raw=b'[[tasks]]\nid = "a"\nprompt = "p"\ntimeout = inf\n')
@example(raw=b'[[tasks]]\nid = 1979-05-27\nprompt = "p"\n')
@example(raw=b'[tasks]\nid = "a"\n')
def test_any_toml_file_loads_or_is_a_usage_error_naming_the_file(raw: bytes) -> None:
    _check(Path("/tasks/t.toml"), raw)


def test_worst_cases_through_the_cli_are_usage_errors_in_bounded_time(
    model_server: ModelServer, repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    worst = {
        "t.jsonl": b"\xef\xbb\xbf"
        + b"\r\n".join(
            [
                b'{"id": "summary.json", "prompt": "p"}',
                b'{"id": "a\\n", "prompt": "p"}',
                b"[" * 100_000,
                b'{"id": "b", "prompt": "p", "max_turns": 1' + b"0" * 5000 + b"}",
                b'{"id": "c", "prompt": "p", "timeout": NaN}',
                b'{"id": "d", "prompt": "\\udc80"}',
                b'{"id": "e", "prompt": "p", "check": "x\\u0000"}',
                _encode('{"id": "ok", "prompt": "x\u2028y"}'),
            ]
            + [b"junk"] * 5000
        ),
        "t.toml": b"tasks = " + b"[" * 100_000,
        "bytes.jsonl": b'{"id": "a", "prompt": "\xff"}\n',
    }
    expected = {
        "t.jsonl": [
            "t.jsonl:1: id 'summary.json' cannot be used",
            "t.jsonl:2: id 'a\\n' cannot be used",
            "t.jsonl:3: bad JSON (nested too deeply)",
            "t.jsonl:4: bad JSON (Exceeds the limit (4300 digits)",
            "t.jsonl:5: `timeout`: expected a finite number of seconds > 0 and <= 1000000000",
            "t.jsonl:6: `prompt` is not valid Unicode (an unpaired surrogate U+DC80",
            "t.jsonl:7: `check` contains a NUL character",
            "... and 4957 more",
        ],
        "t.toml": ["t.toml: bad TOML (nested too deeply)"],
        "bytes.jsonl": ["bytes.jsonl is not UTF-8 (line 1, byte 23)"],
    }
    for name, raw in worst.items():
        path = tmp_path / name
        path.write_bytes(raw)
        started = time.monotonic()
        result = run_batch(model_server, path, out, cwd=repo, timeout=60)
        assert time.monotonic() - started < 20  # ~1.5 s
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr and "internal error" not in result.stderr
        for message in expected[name]:
            assert message in result.stderr, (message, result.stderr[-3000:])
        assert "t.jsonl:8" not in result.stderr  # U+2028 inside a string is one line
        assert len(result.stderr) < 20_000
    assert not out.exists() and model_server.model_requests == []


def test_odd_but_valid_prompts_run(model_server: ModelServer, repo: Path, tmp_path: Path) -> None:
    """Control characters, U+2028, bidi marks, emoji and a long prompt are a prompt like any."""
    odd = "\x1b[31m\u2028\u202e\U0001f600\x7f [task:odd] " + "x" * 300_000
    tasks = write_tasks(tmp_path / "t.jsonl", [{"id": "odd", "prompt": odd}])
    model_server.route("[task:odd]", reply("ok"))
    result = run_batch(model_server, tasks, tmp_path / "out", cwd=repo, timeout=120)
    assert result.returncode == 0, result.stderr
    assert statuses(tmp_path / "out") == {"odd": "success"}
    assert any(odd in text for text in _strings(model_server.model_requests[0].body))


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [text for item in items for text in _strings(item)]


def test_toml_problems_name_the_right_line_or_none() -> None:
    """A header written `[[ tasks ]]` was not counted, and one inside a multi-line string was:
    either shifted every later task's line onto the wrong table."""
    spaced = b'[[ tasks ]]\nid = "a"\nprompt = "p"\n\n[[tasks]] # two\nid = "b"\n'
    with pytest.raises(UsageError, match=r"t\.toml: task 2 \(line 5\): missing `prompt`"):
        parse_tasks(Path("t.toml"), spaced)
    hidden = b'[[tasks]]\nid = "a"\nprompt = """\n[[tasks]]\n"""\n[[tasks]]\nid = "b"\n'
    with pytest.raises(UsageError, match=r"t\.toml: task 2: missing `prompt`"):
        parse_tasks(Path("t.toml"), hidden)
