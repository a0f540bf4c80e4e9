"""The environment model-run commands see, built from `[shell_environment_policy]`.

Order of the rules: inherit (all | core | none), default secret excludes (unless
`ignore_default_excludes`), `exclude`, `include_only`, then the fixed non-interactive
variables, then `set`, and last the sandbox markers (which must tell the truth).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase

from oiexec.config.settings import ShellEnvironmentPolicy
from oiexec.core.redact import looks_secret, matches_any

#: Variables kept by `inherit = "core"`; `LC_*` is a glob.
CORE_VARS: tuple[str, ...] = (
    "HOME",
    "LOGNAME",
    "PATH",
    "SHELL",
    "USER",
    "USERNAME",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TMPDIR",
    "TEMP",
    "TMP",
    "TZ",
    "TERM",
)

#: Keep commands from paging, prompting or colouring: nobody is there to reply.
NON_INTERACTIVE_VARS: Mapping[str, str] = {
    "NO_COLOR": "1",
    "TERM": "dumb",
    "COLORTERM": "",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GH_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "GH_PROMPT_DISABLED": "1",
}


class CommandEnv(dict[str, str]):
    """The command environment; `removed_secrets` holds the values of secret-looking
    variables that were kept away from commands, for `oiexec.core.redact.register_secret`."""

    def __init__(self, env: Mapping[str, str], removed_secrets: Iterable[str] = ()) -> None:
        super().__init__(env)
        self.removed_secrets: list[str] = list(removed_secrets)


def build_command_env(
    policy: ShellEnvironmentPolicy,
    *,
    base_env: Mapping[str, str],
    provider_env_key: str | None,
    sandbox_mode: str,
    network_disabled: bool,
    extra: Mapping[str, str] | None = None,
) -> CommandEnv:
    """The environment for commands, as a `CommandEnv` (a dict with `removed_secrets`).

    `extra` is set after the policy's `set` table (e.g. per-run ids the runner adds).
    """
    env = _inherit(policy.inherit, base_env)
    if not policy.ignore_default_excludes:
        env = {k: v for k, v in env.items() if not looks_secret(k, provider_env_key)}
    if policy.exclude:
        env = {k: v for k, v in env.items() if not matches_any(k, policy.exclude)}
    if policy.include_only:
        env = {k: v for k, v in env.items() if matches_any(k, policy.include_only)}
    env.update(NON_INTERACTIVE_VARS)
    if not any(k in env for k in ("LANG", "LC_ALL", "LC_CTYPE")):
        # Output is decoded as UTF-8; without a locale many tools print `?` for non-ASCII.
        env["LANG"] = "C.UTF-8"
    env.update(policy.set)
    env.update(extra or {})
    env["OPENINTERPRETER_SANDBOX"] = sandbox_mode
    if network_disabled:
        env["OPENINTERPRETER_SANDBOX_NETWORK_DISABLED"] = "1"
    else:
        env.pop("OPENINTERPRETER_SANDBOX_NETWORK_DISABLED", None)
    removed = [
        value
        for name, value in base_env.items()
        if value and looks_secret(name, provider_env_key) and env.get(name) != value
    ]
    return CommandEnv(env, removed)


def _inherit(mode: str, base_env: Mapping[str, str]) -> dict[str, str]:
    if mode == "all":
        return dict(base_env)
    if mode == "core":
        return {k: v for k, v in base_env.items() if _is_core(k)}
    return {}


def _is_core(name: str) -> bool:
    # Core names are matched exactly (case-sensitively), as the OS spells them.
    return any(fnmatchcase(name, glob) for glob in CORE_VARS)
