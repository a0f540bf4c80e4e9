"""The environment model-run commands see, built from `[shell_environment_policy]`.

Order of the rules: inherit (all | core | none), the hidden installation (the runner's own
virtualenv: its PATH entries and `VIRTUAL_ENV`), default secret excludes (unless
`ignore_default_excludes`), `exclude`, `include_only`, then the fixed non-interactive
variables, then `set` (so `set.PATH` given explicitly wins), and last the sandbox markers
(which must tell the truth).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
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


@dataclass(frozen=True)
class HiddenInstall:
    """An installation commands must not see: the program starting them lives there, and
    its interpreter and tools would shadow the ones the project set up (a `python3` without
    the project's packages). `prefix` is its root (a virtualenv), `bin_dirs` the PATH entries
    it puts there (its `bin`/`Scripts`)."""

    prefix: str | None = None
    bin_dirs: tuple[str, ...] = ()


def hide_install(env: Mapping[str, str], hidden: HiddenInstall) -> dict[str, str]:
    """`env` without `hidden`: its PATH entries removed (other entries kept in order),
    `VIRTUAL_ENV` (and the prompt `activate` sets with it) when it names the prefix, and
    `PYTHONHOME`/`PYTHONPATH` entries that lie inside it (they would load its packages into
    the project's interpreter). A virtualenv that is not the hidden one is kept."""
    out = dict(env)
    dirs = {_same(d) for d in hidden.bin_dirs}
    if dirs and "PATH" in out:
        kept = [e for e in out["PATH"].split(os.pathsep) if not e or _same(e) not in dirs]
        out["PATH"] = os.pathsep.join(kept)
    if hidden.prefix is None:
        return out
    prefix = _same(hidden.prefix)
    if out.get("VIRTUAL_ENV") and _same(out["VIRTUAL_ENV"]) == prefix:
        del out["VIRTUAL_ENV"]
        out.pop("VIRTUAL_ENV_PROMPT", None)
    if out.get("PYTHONHOME") and _inside(out["PYTHONHOME"], prefix):
        del out["PYTHONHOME"]
    if out.get("PYTHONPATH"):
        entries = out["PYTHONPATH"].split(os.pathsep)
        kept = [e for e in entries if not (e and _inside(e, prefix))]
        if kept != entries:
            if any(kept):
                out["PYTHONPATH"] = os.pathsep.join(kept)
            else:
                del out["PYTHONPATH"]
    return out


def _same(path: str) -> str:
    # PATH may spell a directory with a trailing slash, `..` or through a symlink.
    return os.path.normcase(os.path.realpath(path))


def _inside(path: str, prefix: str) -> bool:
    resolved = _same(path)
    return resolved == prefix or resolved.startswith(prefix.rstrip(os.sep) + os.sep)


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
    hidden: HiddenInstall | None = None,
) -> CommandEnv:
    """The environment for commands, as a `CommandEnv` (a dict with `removed_secrets`).

    `extra` is set after the policy's `set` table (e.g. per-run ids the runner adds);
    `hidden` is an installation taken out of PATH and `VIRTUAL_ENV` (`hide_install`).
    """
    env = _inherit(policy.inherit, base_env)
    if hidden is not None:
        env = hide_install(env, hidden)
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
