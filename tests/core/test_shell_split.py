"""Splitting a shell line into simple commands (core/shell_split.py): what the command rules
and the hooks' program check judge, so nothing a line runs may be hidden from them."""

from __future__ import annotations

import contextlib
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oiexec.core.shell_split import simple_commands


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("make && git push", [["make"], ["git", "push"]]),
        ("a; b | c || d & e", [["a"], ["b"], ["c"], ["d"], ["e"]]),
        ("true&&(git push)", [["true"], ["git", "push"]]),
        ("(cd x; git push)|cat", [["cd", "x"], ["git", "push"], ["cat"]]),
        ("git push 2>&1 >/dev/null <in", [["git", "push", "2"]]),
        ("echo 'a && b' \"c; d\"", [["echo", "a && b", "c; d"]]),
        ("echo one\ngit push", [["echo", "one"], ["git", "push"]]),
        ("x=$(git push)", [["x=$"], ["git", "push"]]),
        ('echo "$(git push)"', [["echo", "$(git push)"], ["git", "push"]]),
        ("echo `git push`", [["echo", "`git", "push`"], ["git", "push"]]),
        ('echo "a $(b $(c d))"', [["echo", "a $(b $(c d))"], ["b", "$"], ["c", "d"]]),
    ],
)
def test_simple_commands(line: str, expected: list[list[str]]) -> None:
    assert simple_commands(line) == expected


def test_an_unclosed_quote_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        simple_commands('git push "oops')


@given(st.text(max_size=300))
def test_any_text_splits_or_is_a_value_error(text: str) -> None:
    try:
        commands = simple_commands(text)
    except ValueError:
        return
    assert all(isinstance(word, str) for words in commands for word in words)


@given(st.lists(st.sampled_from(["$(", ")", "`", "(", "'", '"', "&&", "git", " ", "\n"])))
def test_shell_punctuation_splits_or_is_a_value_error(parts: list[str]) -> None:
    with contextlib.suppress(ValueError):
        simple_commands("".join(parts))


@pytest.mark.parametrize("line", ['echo "' + "$(" * 20_000 + '"', "`a" * 20_000, "(" * 50_000])
def test_pathological_lines_are_split_quickly(line: str) -> None:
    started = time.monotonic()
    with contextlib.suppress(ValueError):
        simple_commands(line)
    assert time.monotonic() - started < 5
