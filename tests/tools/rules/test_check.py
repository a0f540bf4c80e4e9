"""Judging a command line by the rules (tools/rules/check.py): each simple command of a
compound line, nested shells and substitutions, wrappers; the strictest decision wins and a
headless run refuses `prompt` like `forbidden`."""

from __future__ import annotations

import shlex
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oiexec.tools.rules.check import RuleSet
from oiexec.tools.rules.parse import parse_rules

RULES = """\
prefix_rule(pattern=["git", ["push", "fetch"]], decision="forbidden",
            justification="Pushing is the pipeline's job.")
prefix_rule(pattern=["rm", "-rf"], decision="prompt")
prefix_rule(pattern=["git"], decision="allow")
"""


@pytest.fixture
def rules() -> RuleSet:
    return RuleSet(tuple(parse_rules(RULES, "r.rules").rules))


@pytest.mark.parametrize(
    "line",
    [
        "git push",
        "git push origin main",
        "make && git push",
        "make; git fetch || true",
        "cat x | git push",
        "(cd sub && git push)",
        "true&&(git push)",
        "echo $(git push)",
        'echo "$(git push)"',
        "echo `git push`",
        "FOO=1 git push",
        "env -u HOME FOO=1 git push",
        "timeout -s KILL 5 nohup git push",
        "sudo -u me git push",
        "/usr/bin/git push",
        "bash -lc 'git push'",
        "sh -o pipefail -c \"eval 'git push'\"",
        "if true; then git push; fi",
        "for b in a; do git push; done",
        'git push "unclosed',
        "git push 'unclosed && make",
        "! git push",
    ],
)
def test_a_forbidden_command_anywhere_in_the_line_refuses_it(rules: RuleSet, line: str) -> None:
    refusal = rules.refusal(["/bin/bash", "-c", line])
    assert refusal is not None
    assert "forbidden by a command rule (r.rules:1)" in refusal
    assert refusal.endswith("Pushing is the pipeline's job.")


@pytest.mark.parametrize(
    "line",
    [
        "git status",
        "git pull && git log",
        "echo git push",
        "echo 'git push'",
        "gitk push",
        "git",
        "rm -r build",
        "timeout 5 echo git push",
        "make 'unclosed",
    ],
)
def test_other_commands_run(rules: RuleSet, line: str) -> None:
    assert rules.refusal(["/bin/bash", "-c", line]) is None


def test_prompt_is_refused_headless_and_says_why(rules: RuleSet) -> None:
    refusal = rules.refusal(["bash", "-c", "rm -rf build"])
    assert refusal is not None
    assert "`rm -rf` needs approval under a command rule (r.rules:3)" in refusal
    assert "approval policy `never`" in refusal


def test_the_strictest_decision_wins(rules: RuleSet) -> None:
    # `git` is allowed by one rule and `git push` forbidden by another; `rm -rf` is prompt.
    judged = rules.judge(["bash", "-c", "rm -rf x && git push"])
    assert judged is not None
    rule, words = judged
    assert (rule.decision, words) == ("forbidden", ["git", "push"])


def test_the_tools_own_shell_is_not_judged_the_models_is() -> None:
    text = 'prefix_rule(pattern=["bash"], decision="forbidden")'
    bash = RuleSet(tuple(parse_rules(text, "b.rules").rules))
    assert bash.refusal(["/bin/bash", "-c", "make test"]) is None
    assert bash.refusal(["/bin/bash", "-lc", "bash -c 'make test'"]) is not None
    assert bash.refusal(["/bin/bash", "-c", "cd x && bash run.sh"]) is not None
    # Whatever shell runs the command (`shell` of exec_command, a harness's), its script is
    # what is judged.
    assert (
        RuleSet(tuple(parse_rules(RULES, "r.rules").rules)).refusal(
            ["/usr/bin/fish", "-c", "git push"]
        )
        is not None
    )


def test_argv_without_a_shell_is_judged_as_it_is(rules: RuleSet) -> None:
    assert rules.refusal(["git", "fetch", "--all"]) is not None
    assert rules.refusal(["git", "status"]) is None


@given(st.text(max_size=300))
def test_any_command_text_is_judged_without_an_error(text: str) -> None:
    rules = RuleSet(tuple(parse_rules(RULES, "r.rules").rules))
    refusal = rules.refusal(["/bin/bash", "-c", text])
    assert refusal is None or refusal.startswith("The command was not run: ")


@pytest.mark.parametrize(
    "line", ["bash -c " * 5_000 + "git push", "eval " * 20_000, "$(" * 20_000, "`" * 40_000]
)
def test_pathological_lines_are_judged_quickly(rules: RuleSet, line: str) -> None:
    started = time.monotonic()
    rules.refusal(["/bin/bash", "-c", line])
    assert time.monotonic() - started < 2


def test_a_line_nested_past_the_limits_is_refused_as_unjudgeable(rules: RuleSet) -> None:
    deep = "echo ok"
    for _ in range(10):
        deep = f"bash -c {shlex.quote(deep)}"
    refusal = rules.refusal(["/bin/bash", "-c", deep])
    assert refusal is not None and "nests too many scripts" in refusal
    assert rules.refusal(["/bin/bash", "-c", "eval " * 60_000 + "true"]) == refusal
    # Within the limits, nesting is followed.
    assert rules.refusal(["/bin/bash", "-c", "bash -c 'eval \"sh -c true\"'"]) is None


def test_rules_that_refuse_nothing_judge_nothing() -> None:
    allow = RuleSet(tuple(parse_rules('prefix_rule(pattern=["git"])', "a.rules").rules))
    assert allow.refusal(["/bin/bash", "-c", "eval " * 60_000 + "git push"]) is None
