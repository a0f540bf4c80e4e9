"""Reading `.rules` files (tools/rules/parse.py): the literal subset of Codex's policy
language, never run; every problem a `ConfigError` naming the file and line."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oiexec.core.errors import ConfigError, ExitCode
from oiexec.tools.rules.parse import parse_rules

GOOD = """\
# Codex's example shape: comments, trailing commas, both kinds of example.
prefix_rule(
    pattern = ["git", ["push", "fetch"]],
    decision = "forbidden",
    justification = "CI pushes; use the diff report instead.",
    match = ["git push origin main", ["git", "fetch"]],
    not_match = ["git pull", ["git"]],
)

prefix_rule(pattern = ["cp"], decision = "prompt")
prefix_rule(pattern = ["ls"])
"""


def test_rules_are_read_with_their_lines() -> None:
    parsed = parse_rules(GOOD, "/home/u/rules/default.rules")
    push, cp, ls = parsed.rules
    assert push.pattern == (("git",), ("push", "fetch"))
    assert push.decision == "forbidden"
    assert push.justification == "CI pushes; use the diff report instead."
    assert push.origin == "/home/u/rules/default.rules:2"
    assert (cp.decision, cp.origin) == ("prompt", "/home/u/rules/default.rules:10")
    assert (ls.decision, ls.justification) == ("allow", None)  # Codex's default
    assert parsed.notes == []


def test_codex_calls_oiexec_has_no_use_for_are_skipped_with_a_note() -> None:
    text = 'host_executable(name = "git", paths = ["/usr/bin/git"])\nprefix_rule(pattern=["rm"])\n'
    parsed = parse_rules(text, "r.rules")
    assert len(parsed.rules) == 1
    assert parsed.notes == ["r.rules:1: host_executable(...) has no effect in oiexec; skipped"]


def _error(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        parse_rules(text, "p.rules")
    assert info.value.exit_code == ExitCode.CONFIG
    assert "--ignore-rules" in (info.value.hint or "")
    return info.value.message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('\n\nprefix_rule(pattern=["git"], match=["ls"])', "p.rules:3: the `match` example `ls`"),
        (
            'prefix_rule(pattern=["git", "push"], not_match=["git push -f"])',
            "p.rules:1: the `not_match` example `git push -f` matches `git push`",
        ),
        ('prefix_rule(pattern=["x"], decision="deny")', "p.rules:1: `decision` is 'deny'"),
        ("prefix_rule(pattern=[])", "p.rules:1: `pattern` must be a non-empty list"),
        ('prefix_rule(pattern=["a", []])', "p.rules:1: each `pattern` element"),
        ('prefix_rule(pattern=["a"], colour="red")', "p.rules:1: prefix_rule has no argument"),
        ('prefix_rule(["a"])', "p.rules:1: prefix_rule takes keyword arguments only"),
        ("prefix_rule(decision='forbidden')", "p.rules:1: prefix_rule needs `pattern`"),
        ('x = ["git"]\nprefix_rule(pattern=x)', "p.rules:1: only prefix_rule(...) calls"),
        ('\nprefix_rule(pattern=["a" + "b"])', "p.rules:2: `pattern` must be a string or a list"),
        ('load("other.star", "r")', "p.rules:1: only prefix_rule(...) calls are allowed"),
        ('__import__("os").system("touch pwned")', "p.rules:1: only prefix_rule(...) calls"),
        ('prefix_rule(pattern=["a"], match=["\'unclosed"])', "p.rules:1: `match` example"),
        ("prefix_rule(pattern=[\n", "p.rules:1: not valid rules syntax"),
        ("for x in y: pass", "p.rules:1: only prefix_rule(...) calls are allowed here, not a"),
    ],
)
def test_problems_name_the_file_and_line(text: str, expected: str) -> None:
    assert _error(text).startswith(expected)


def test_nothing_in_a_rules_file_is_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    text = f'prefix_rule(pattern=[__import__("os").system("touch {marker}")])'
    _error(text)
    assert not os.path.exists(marker)


@given(st.text(max_size=400))
def test_any_text_is_rules_or_a_config_error(text: str) -> None:
    try:
        parse_rules(text, "fuzz.rules")
    except ConfigError as exc:
        assert exc.message.startswith("fuzz.rules")


_PIECES = ["prefix_rule(", ")", "pattern=", "[", "]", '"git"', ",", "match=", "decision=",
           '"forbidden"', "\n", "(", "x", "'", "#"]  # fmt: skip


@given(st.lists(st.sampled_from(_PIECES), max_size=60))
def test_rule_like_text_is_rules_or_a_config_error(parts: list[str]) -> None:
    try:
        parse_rules("".join(parts), "fuzz.rules")
    except ConfigError as exc:
        assert exc.message.startswith("fuzz.rules")


@pytest.mark.parametrize(
    "text", ["[" * 100_000, "-" * 200_000 + "1", 'prefix_rule(pattern=["a"])\n' * 5_000, "\0"]
)
def test_hostile_files_end_quickly_in_a_config_error_or_rules(text: str) -> None:
    started = time.monotonic()
    with contextlib.suppress(ConfigError):
        parse_rules(text, "big.rules")
    assert time.monotonic() - started < 10
