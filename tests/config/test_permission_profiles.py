"""Compiling permission profiles into sandbox rules: inheritance, precedence, special paths,
and every refusal naming its rule (enforcement end to end: tests/sandbox/test_permissions.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from oiexec.config.permissions import PermissionProfile, ProfileRules, compile_profile
from oiexec.core.errors import ConfigError
from tests.conftest import run_cli

CWD = Path("/work/project")


def compile_(profiles: dict[str, dict[str, Any]], name: str = "p", **environ: str) -> ProfileRules:
    tables = {key: PermissionProfile(**value) for key, value in profiles.items()}
    return compile_profile(name, tables, CWD, environ)


def test_built_ins_are_the_sandbox_modes() -> None:
    assert compile_({}, ":read-only").mode == "read-only"
    assert compile_({}, ":workspace").mode == "workspace-write"
    assert compile_({}, ":danger-full-access").mode == "danger-full-access"


def test_extending_workspace_keeps_its_roots_and_a_child_narrows_them() -> None:
    rules = compile_({"p": {"extends": ":workspace", "filesystem": {":slash_tmp": "read"}}})
    assert (rules.mode, rules.cwd_writable) == ("workspace-write", True)
    assert not rules.slash_tmp_writable and rules.tmpdir_writable


def test_deny_beats_write_beats_read_on_the_same_path() -> None:
    rules = compile_(
        {
            "base": {"extends": ":workspace", "filesystem": {"/data": "write"}},
            "p": {
                "extends": "base",
                "filesystem": {
                    ":workspace_roots": {"secrets": "deny"},
                    "/work/project/secrets": "read",
                },
            },
        }
    )
    assert rules.extra_roots == (Path("/data"),)
    assert rules.deny == (CWD / "secrets",)
    assert rules.read_only == ()


def test_workspace_roots_rules_apply_to_every_root() -> None:
    rules = compile_(
        {
            "p": {
                "extends": ":workspace",
                "workspace_roots": {"/other": True},
                "filesystem": {":workspace_roots": {".": "write", "docs": "read"}},
            }
        }
    )
    assert rules.extra_roots == (Path("/other"),)
    assert set(rules.read_only) == {CWD / "docs", Path("/other/docs")}


def test_tmpdir_deny_hides_the_variable_s_directory() -> None:
    rules = compile_(
        {"p": {"extends": ":workspace", "filesystem": {":tmpdir": "deny"}}}, TMPDIR="/scratch"
    )
    assert rules.deny == (Path("/scratch"),)


@pytest.mark.parametrize(
    ("profiles", "rule", "why"),
    [
        ({"p": {"extends": "p"}}, "permissions.p.extends", "loop"),
        ({"p": {"extends": "missing"}}, "permissions.p.extends", "`missing` is not defined"),
        (
            {"p": {"filesystem": {":root": "write"}}},
            'permissions.p.filesystem.":root"',
            "`write` is",
        ),
        (
            {"p": {"extends": ":read-only", "filesystem": {"relative/x": "deny"}}},
            '"relative/x"',
            "not an absolute path",
        ),
        (
            {"p": {"extends": ":read-only", "filesystem": {":home": "deny"}}},
            '":home"',
            "not a special path",
        ),
        (
            {"p": {"extends": ":read-only", "filesystem": {"/etc": "hidden"}}},
            '"/etc"',
            "expected one of",
        ),
        (
            {"p": {"extends": ":read-only", "filesystem": {"/work": "deny"}}},
            '"/work"',
            "working directory",
        ),
        (
            {"p": {"extends": ":workspace", "filesystem": {"/d": "deny", "/d/pub": "read"}}},
            '"/d/pub"',
            "inside the denied /d",
        ),
        ({"p": {"extends": ":danger-full-access"}}, "permissions.p.extends", "no sandbox"),
        (
            {"p": {"extends": ":workspace", "filesystem": {"/srv/link/../secret": "deny"}}},
            '"/srv/link/../secret"',
            "goes up with `..`",
        ),
        (
            {"p": {"extends": ":read-only", "network": {"enabled": True}}},
            "network.enabled",
            "writes somewhere",
        ),
    ],
)
def test_what_cannot_be_enforced_is_refused_naming_the_rule(
    profiles: dict[str, dict[str, Any]], rule: str, why: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        compile_(profiles)
    assert rule in caught.value.message
    assert why in caught.value.message


def test_config_show_gives_the_mode_the_profile_gives(repo: Path, oi_home: Path) -> None:
    (oi_home / "config.toml").write_text(
        'default_permissions = "ci"\n[permissions.ci]\nextends = ":workspace"\n'
    )
    shown = run_cli(["config", "show", "--origins"], cwd=repo)
    assert shown.returncode == 0, shown.stderr
    [line] = [row for row in shown.stdout.splitlines() if row.startswith("sandbox_mode")]
    assert line.startswith('sandbox_mode = "workspace-write"')
    assert line.endswith("# permission profile ci")
