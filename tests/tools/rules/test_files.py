"""Where rules are read from (runner/command_rules.py): the user's config home, a trusted
project's `.openinterpreter/rules/` opened without following links and size-capped; and the
persistent shell judging its commands like every other command tool."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from oiexec.config.loader import ConfigInputs, load_config
from oiexec.core.errors import ConfigError, ToolInputError
from oiexec.core.events import CommandExecutionItem, ItemCompleted, ThreadEvent
from oiexec.runner.command_rules import MAX_RULES_FILE, load_command_rules
from oiexec.tools.rules.check import RuleSet
from tests.conftest import MakeToolContext

FORBID_TOUCH = 'prefix_rule(pattern=["touch"], decision="forbidden", justification="no")\n'


def _load(repo: Path, home: Path, *, trusted: bool = False) -> tuple[RuleSet | None, list[str]]:
    if trusted:
        (home / "config.toml").write_text(f'[projects."{repo}"]\ntrust_level = "trusted"\n')
    config = load_config(ConfigInputs(cwd=repo), home=home)
    warnings: list[str] = []
    return load_command_rules(config, ignore=False, warnings=warnings), warnings


def _project_dir(repo: Path) -> Path:
    path = repo / ".openinterpreter" / "rules"
    path.mkdir(parents=True)
    return path


def test_user_files_in_name_order_then_the_trusted_project(repo: Path, oi_home: Path) -> None:
    (oi_home / "rules").mkdir()
    (oi_home / "rules" / "b.rules").write_text('prefix_rule(pattern=["b"], decision="prompt")\n')
    (oi_home / "rules" / "a.rules").write_text('prefix_rule(pattern=["a"], decision="prompt")\n')
    (oi_home / "rules" / "notes.txt").write_text("not rules")
    (_project_dir(repo) / "p.rules").write_text(FORBID_TOUCH)
    rules, warnings = _load(repo, oi_home, trusted=True)
    assert rules is not None and warnings == []
    assert [r.pattern[0][0] for r in rules.rules] == ["a", "b", "touch"]


def test_untrusted_project_rules_are_not_read_and_a_warning_says_so(
    repo: Path, oi_home: Path
) -> None:
    (_project_dir(repo) / "p.rules").write_text("not even valid")
    rules, warnings = _load(repo, oi_home)
    assert rules is None
    (warning,) = warnings
    assert "the project is not trusted" in warning and "trust_level" in warning


def test_ignore_reads_nothing(repo: Path, oi_home: Path) -> None:
    (oi_home / "rules").mkdir()
    (oi_home / "rules" / "x.rules").write_text("broken(")
    config = load_config(ConfigInputs(cwd=repo), home=oi_home)
    assert load_command_rules(config, ignore=True, warnings=[]) is None


@pytest.mark.parametrize("linked", ["directory", "file"])
def test_a_project_rules_link_is_ignored_with_a_warning(
    repo: Path, oi_home: Path, tmp_path: Path, linked: str
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "x.rules").write_text(FORBID_TOUCH)
    if linked == "directory":
        (repo / ".openinterpreter").mkdir()
        (repo / ".openinterpreter" / "rules").symlink_to(elsewhere)
    else:
        (_project_dir(repo) / "x.rules").symlink_to(elsewhere / "x.rules")
    rules, warnings = _load(repo, oi_home, trusted=True)
    assert rules is None
    (warning,) = warnings
    assert "ignored the command rules in" in warning and "symbolic link" in warning


def test_a_project_rules_file_over_the_cap_is_refused(repo: Path, oi_home: Path) -> None:
    (_project_dir(repo) / "big.rules").write_text("#" * (MAX_RULES_FILE + 1))
    with pytest.raises(ConfigError, match="over the 1 MiB limit"):
        _load(repo, oi_home, trusted=True)


def test_a_project_fifo_is_refused_without_blocking(repo: Path, oi_home: Path) -> None:
    os.mkfifo(_project_dir(repo) / "pipe.rules")
    with pytest.raises(ConfigError, match="not a regular file"):
        _load(repo, oi_home, trusted=True)


def test_persistent_shell_commands_are_judged(
    tmp_path: Path, tool_context: MakeToolContext
) -> None:
    from oiexec.tools.adapters.persistent import run_persistent
    from oiexec.tools.framework import Runtime
    from oiexec.tools.rules.parse import parse_rules
    from oiexec.tools.style import Style

    events: list[ThreadEvent] = []
    ctx = tool_context(tmp_path, events=events)
    ctx.command_rules = RuleSet(tuple(parse_rules(FORBID_TOUCH, "r.rules").rules))
    rt = Runtime(style=Style())
    with pytest.raises(ToolInputError) as info:
        run_persistent(ctx, rt, "cd . && touch marker", timeout_s=5)
    assert info.value.kind == "denied"
    assert not (tmp_path / "marker").exists()
    (done,) = [e.item for e in events if isinstance(e, ItemCompleted)]
    assert isinstance(done, CommandExecutionItem)
    assert done.status == "declined" and "no" in done.aggregated_output
    assert "persistent_shell" not in rt.extras or rt.extras["persistent_shell"].pid is None
