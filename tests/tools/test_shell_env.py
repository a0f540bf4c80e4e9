"""`[shell_environment_policy]` rules and the fixed variables commands always get."""

from __future__ import annotations

import os
import subprocess
from typing import Any

from oiexec.config.settings import ShellEnvironmentPolicy
from oiexec.tools.shell_env import build_command_env

BASE = {
    "HOME": "/home/u",
    "PATH": "/usr/bin:/bin",
    "LC_TIME": "de_DE.UTF-8",
    "AWS_REGION": "eu-west-1",
    "AWS_ACCESS_KEY_ID": "AKIAEXAMPLEKEY",
    "GITHUB_TOKEN": "ghp_example_token",
    "db_password": "hunter2hunter2",
    "MY_PROVIDER_CRED": "provider-credential",
    "EDITOR": "vim",
    "PAGER": "less",
}


def build(policy: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, str]:
    options: dict[str, Any] = {
        "base_env": BASE,
        "provider_env_key": "MY_PROVIDER_CRED",
        "sandbox_mode": "workspace-write",
        "network_disabled": True,
        "extra": {},
    }
    options.update(kwargs)
    return build_command_env(ShellEnvironmentPolicy(**(policy or {})), **options)


def test_inherit_all_drops_secret_looking_names_and_the_provider_key() -> None:
    env = build()
    assert env["HOME"] == "/home/u"
    assert env["AWS_REGION"] == "eu-west-1"
    assert env["EDITOR"] == "vim"
    for name in ("AWS_ACCESS_KEY_ID", "GITHUB_TOKEN", "db_password", "MY_PROVIDER_CRED"):
        assert name not in env


def test_removed_secret_values_are_reported_for_redaction() -> None:
    env = build_command_env(
        ShellEnvironmentPolicy(),
        base_env=BASE,
        provider_env_key="MY_PROVIDER_CRED",
        sandbox_mode="read-only",
        network_disabled=True,
        extra={},
    )
    assert sorted(env.removed_secrets) == sorted(
        ["AKIAEXAMPLEKEY", "ghp_example_token", "hunter2hunter2", "provider-credential"]
    )


def test_ignore_default_excludes_passes_secrets_through() -> None:
    env = build({"ignore_default_excludes": True})
    assert env["GITHUB_TOKEN"] == "ghp_example_token"
    assert env["MY_PROVIDER_CRED"] == "provider-credential"


def test_inherit_core_keeps_only_basics() -> None:
    env = build({"inherit": "core"})
    assert env["HOME"] == "/home/u"
    assert env["PATH"] == "/usr/bin:/bin"
    assert env["LC_TIME"] == "de_DE.UTF-8"
    assert "AWS_REGION" not in env
    assert "EDITOR" not in env


def test_inherit_none_keeps_only_what_is_set() -> None:
    env = build({"inherit": "none", "set": {"FOO": "bar"}})
    assert "HOME" not in env and "PATH" not in env
    assert env["FOO"] == "bar"
    assert env["NO_COLOR"] == "1"


def test_exclude_globs_are_case_insensitive() -> None:
    env = build({"exclude": ["aws_*", "edit?r"]})
    assert "AWS_REGION" not in env
    assert "EDITOR" not in env
    assert "HOME" in env


def test_include_only_then_set() -> None:
    env = build({"include_only": ["PATH", "home"], "set": {"EXTRA": "1", "PATH": "/opt/bin"}})
    assert env["HOME"] == "/home/u"
    assert env["PATH"] == "/opt/bin"
    assert env["EXTRA"] == "1"
    assert "LC_TIME" not in env and "EDITOR" not in env


def test_non_interactive_variables_always_set() -> None:
    env = build({"inherit": "none"})
    assert env["NO_COLOR"] == "1"
    assert env["TERM"] == "dumb"
    assert env["PAGER"] == "cat"  # beats the inherited `less`
    assert env["GIT_PAGER"] == "cat"
    assert env["GH_PAGER"] == "cat"
    assert env["GIT_TERMINAL_PROMPT"] == "0"
    assert env["GH_PROMPT_DISABLED"] == "1"
    assert "CI" not in env


def test_sandbox_markers() -> None:
    env = build(sandbox_mode="workspace-write", network_disabled=True)
    assert env["OPENINTERPRETER_SANDBOX"] == "workspace-write"
    assert env["OPENINTERPRETER_SANDBOX_NETWORK_DISABLED"] == "1"
    # A user `set` cannot make the markers lie.
    env = build(
        {"set": {"OPENINTERPRETER_SANDBOX_NETWORK_DISABLED": "1"}},
        sandbox_mode="danger-full-access",
        network_disabled=False,
    )
    assert env["OPENINTERPRETER_SANDBOX"] == "danger-full-access"
    assert "OPENINTERPRETER_SANDBOX_NETWORK_DISABLED" not in env


def test_extra_is_applied_after_set() -> None:
    env = build({"set": {"A": "from-set"}}, extra={"A": "from-extra"})
    assert env["A"] == "from-extra"


def test_a_real_shell_sees_the_policy() -> None:
    base = {**os.environ, "SUPER_SECRET": "do-not-leak-me", "KEEP_ME": "yes"}
    env = build(base_env=base, provider_env_key=None)
    out = subprocess.run(
        ["/bin/bash", "-c", 'echo "$KEEP_ME|${SUPER_SECRET:-gone}|$PAGER"'],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out == "yes|gone|cat\n"
