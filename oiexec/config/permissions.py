"""Permission profiles: `default_permissions = "<name>"` and `[permissions.<name>]`, Codex's
newer way to say what commands may read, write and reach.

A profile becomes a sandbox policy: its `write` paths are the writable roots, its `read`
paths inside them stay read-only, its `deny` paths are hidden from commands. Whatever
oiexec's sandboxes cannot enforce is refused with the config exit code (3), naming the rule
and why; a rule is never dropped with a warning (the sandbox fails closed). Built-ins:
`:read-only`, `:workspace` and `:danger-full-access`.

    default_permissions = "ci"
    [permissions.ci]
    extends = ":workspace"
    [permissions.ci.filesystem]
    "/home/ci/.aws" = "deny"
    ":workspace_roots" = { "." = "write", "docs" = "read", ".env" = "deny" }
    [permissions.ci.network]
    enabled = true

Filesystem keys: an absolute path (`~` expanded) or a special path: `:root` (everything;
only `read` is possible here: commands can always read the whole file system except what a
profile denies), `:minimal` (system paths, within `:root`), `:tmpdir` ($TMPDIR), `:slash_tmp`
(/tmp), and `:workspace_roots` (or the older `:project_roots`), whose value is an access for
every workspace root or a table of paths relative to each root (`"."` is the root itself).
Values: `read`, `write`, `deny` (`none` is Codex's older spelling). Where two rules name the
same path, `deny` beats `write` beats `read`, as in Codex.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from oiexec.core.errors import ConfigError
from oiexec.core.policy import SandboxMode, SandboxPolicy

__all__ = [
    "BUILTIN_PROFILES",
    "IN_PROCESS_READERS",
    "PermissionProfile",
    "ProfileRules",
    "apply_profile",
    "compile_profile",
    "refuse_unenforceable",
]

Access = Literal["read", "write", "deny"]
#: Each path a profile names, with its strongest access and the rule that gave it.
_RuleMap = dict[Path, tuple[Access, str]]
_STRENGTH: dict[Access, int] = {"read": 0, "write": 1, "deny": 2}
_ACCESS_WORDS: dict[str, Access] = {
    "read": "read",
    "write": "write",
    "deny": "deny",
    "none": "deny",
}
BUILTIN_PROFILES: dict[str, SandboxMode] = {
    ":read-only": "read-only",
    ":workspace": "workspace-write",
    ":danger-full-access": "danger-full-access",
}
_WORKSPACE_KEYS = (":workspace_roots", ":project_roots")
_SPECIALS = (":root", ":minimal", ":tmpdir", ":slash_tmp", *_WORKSPACE_KEYS)
#: What `extends` of a built-in starts from, as filesystem rules.
_BUILTIN_FILESYSTEM: dict[str, dict[str, Any]] = {
    ":read-only": {":root": "read"},
    ":workspace": {
        ":root": "read",
        ":workspace_roots": {".": "write"},
        ":tmpdir": "write",
        ":slash_tmp": "write",
    },
}


class PermissionProfile(BaseModel):
    """`[permissions.<name>]`, with Codex's keys; the values are checked when the profile is
    compiled, so a mistake is reported with the rule it is in."""

    model_config = ConfigDict(extra="forbid", strict=True)

    description: str | None = None
    extends: str | None = None
    filesystem: dict[str, Any] = Field(default_factory=dict)
    network: dict[str, Any] = Field(default_factory=dict)
    #: Directories that count as workspace roots besides the working directory.
    workspace_roots: dict[str, bool] = Field(default_factory=dict)


@dataclass(frozen=True)
class ProfileRules:
    """A compiled profile, ready to become a `SandboxPolicy`."""

    name: str
    mode: SandboxMode
    cwd_writable: bool = True
    extra_roots: tuple[Path, ...] = ()
    read_only: tuple[Path, ...] = ()
    deny: tuple[Path, ...] = ()
    network: bool = False
    slash_tmp_writable: bool = True
    tmpdir_writable: bool = True


def compile_profile(
    name: str, profiles: Mapping[str, PermissionProfile], cwd: Path, environ: Mapping[str, str]
) -> ProfileRules:
    """The rules of profile `name` for a run in `cwd`; `ConfigError` (exit 3) for anything the
    sandbox could not enforce as written."""
    if name in BUILTIN_PROFILES:
        return ProfileRules(name=name, mode=BUILTIN_PROFILES[name])
    if name.startswith(":"):
        raise _refuse(
            "default_permissions",
            f"`{name}` is not a built-in profile",
            f"Use one of {', '.join(BUILTIN_PROFILES)}, or a [permissions.<name>] table.",
        )
    filesystem, network, roots, base = _resolved(name, profiles)
    if base == ":danger-full-access":
        raise _refuse(
            f"permissions.{name}.extends",
            "a profile cannot add rules to `:danger-full-access`, which has no sandbox",
            'Extend ":workspace" or ":read-only" instead.',
        )
    return _compile(name, filesystem, network, roots, cwd, environ)


def _resolved(
    name: str, profiles: Mapping[str, PermissionProfile]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, bool], str | None]:
    """The profile with what it extends merged under it (the child's keys win), and the
    built-in at the bottom of the chain, if any."""
    chain: list[str] = []
    current: str | None = name
    base: str | None = None
    while current is not None:
        if current in BUILTIN_PROFILES:
            base = current
            break
        if current not in profiles:
            where = f"permissions.{chain[-1]}.extends" if chain else "default_permissions"
            raise _refuse(
                where,
                f"profile `{current}` is not defined",
                f"Add a [permissions.{current}] table, or use a built-in: "
                + ", ".join(BUILTIN_PROFILES),
            )
        if current in chain:
            raise _refuse(
                f"permissions.{chain[-1]}.extends", "profiles extend each other in a loop", None
            )
        chain.append(current)
        current = profiles[current].extends
    filesystem: dict[str, Any] = dict(_BUILTIN_FILESYSTEM.get(base or "", {}))
    network: dict[str, Any] = {}
    roots: dict[str, bool] = {}
    for profile in (profiles[link] for link in reversed(chain)):
        for key, value in profile.filesystem.items():
            old = filesystem.get(key)
            if isinstance(old, dict) and isinstance(value, dict):
                filesystem[key] = {**old, **value}
            else:
                filesystem[key] = value
        network.update(profile.network)
        roots.update(profile.workspace_roots)
    return filesystem, network, roots, base


def _compile(
    name: str,
    filesystem: dict[str, Any],
    network: dict[str, Any],
    roots: dict[str, bool],
    cwd: Path,
    environ: Mapping[str, str],
) -> ProfileRules:
    key = f"permissions.{name}.filesystem"
    rules: _RuleMap = {}
    root_access: Access | None = None
    tmp_access: dict[str, Access] = {}
    workspace = [
        cwd,
        *(_absolute(p, f"permissions.{name}.workspace_roots") for p, on in roots.items() if on),
    ]

    def add(path: Path, access: Access, rule: str) -> None:
        old = rules.get(path)
        if old is None or _STRENGTH[access] > _STRENGTH[old[0]]:
            rules[path] = (access, rule)

    for entry, value in filesystem.items():
        rule = f'{key}."{entry}"'
        if entry == "glob_scan_max_depth":
            continue  # only for glob rules, which are refused below
        if entry in _WORKSPACE_KEYS:
            for path, access, sub in _workspace_rules(rule, value, workspace):
                add(path, access, sub)
            continue
        access = _access(value, rule)
        if entry == ":root":
            root_access = access
        elif entry in (":tmpdir", ":slash_tmp"):
            tmp_access[entry] = access
            target = environ.get("TMPDIR") if entry == ":tmpdir" else "/tmp"
            if access == "deny" and target:
                add(Path(target), "deny", rule)
        else:
            named = _path_rule(entry, access, rule)
            if named is not None:
                add(named, access, rule)
    if root_access != "read":
        given = f"`{root_access}` is" if root_access else "leaving `:root` out is"
        raise _refuse(
            f'{key}.":root"',
            "oiexec's sandboxes always let commands read the whole file system except what a "
            f"profile denies; {given} not something they can enforce",
            'Add ":root" = "read" and deny the paths that must stay unreadable.',
        )
    return _rules(name, rules, network, tmp_access, cwd)


def _workspace_rules(
    rule: str, value: Any, workspace: list[Path]
) -> list[tuple[Path, Access, str]]:
    """`:workspace_roots`: one access for every root, or a table of paths relative to each."""
    table = value if isinstance(value, dict) else {".": value}
    found: list[tuple[Path, Access, str]] = []
    for relative, access in table.items():
        sub = f'{rule}."{relative}"'
        if (
            any(ch in relative for ch in "*?[")
            or Path(relative).is_absolute()
            or ".." in Path(relative).parts
        ):
            raise _refuse(
                sub,
                "only plain paths relative to each workspace root are supported "
                "(no glob patterns, no absolute paths, no `..`)",
                "List the paths to hide or protect one by one.",
            )
        found.extend(
            (Path(os.path.normpath(root / relative)), _access(access, sub), sub)
            for root in workspace
        )
    return found


def _path_rule(entry: str, access: Access, rule: str) -> Path | None:
    """The path a filesystem key names (None for `:minimal`, which adds nothing: system paths
    are within `:root`); a key the sandbox cannot enforce is refused."""
    if entry == ":minimal":
        if access != "read":
            raise _refuse(rule, "only `read` is supported for `:minimal`", None)
        return None
    if entry.startswith(":"):
        raise _refuse(
            rule,
            f"`{entry}` is not a special path oiexec knows",
            f"Use an absolute path or one of {', '.join(_SPECIALS)}.",
        )
    if any(ch in entry for ch in "*?["):
        raise _refuse(rule, "glob patterns are not supported", "List the paths one by one.")
    return _absolute(entry, rule)


def _rules(
    name: str,
    rules: _RuleMap,
    network: dict[str, Any],
    tmp_access: dict[str, Access],
    cwd: Path,
) -> ProfileRules:
    writes = sorted(p for p, (a, _) in rules.items() if a == "write")
    reads = sorted(p for p, (a, _) in rules.items() if a == "read")
    denies = sorted(p for p, (a, _) in rules.items() if a == "deny")
    _check_layout(rules, writes, reads, denies, cwd)
    read_only = tuple(p for p in reads if any(w == p or w in p.parents for w in writes))
    enabled = _network_enabled(name, network)
    slash_tmp = tmp_access.get(":slash_tmp", "read") == "write"
    tmpdir = tmp_access.get(":tmpdir", "read") == "write"
    mode: SandboxMode = "workspace-write" if writes or slash_tmp or tmpdir else "read-only"
    if enabled and mode == "read-only":
        raise _refuse(
            f"permissions.{name}.network.enabled",
            "the network can only be opened for a profile that writes somewhere (oiexec's "
            "read-only sandbox keeps it off)",
            "Give the profile a writable path, or turn the network off.",
        )
    return ProfileRules(
        name=name,
        mode=mode,
        cwd_writable=cwd in writes,
        extra_roots=tuple(p for p in writes if p != cwd),
        read_only=read_only,
        deny=tuple(denies),
        network=enabled,
        slash_tmp_writable=slash_tmp,
        tmpdir_writable=tmpdir,
    )


def _check_layout(
    rules: _RuleMap, writes: list[Path], reads: list[Path], denies: list[Path], cwd: Path
) -> None:
    """Refuse the nestings the sandboxes cannot build: a shown path inside a hidden one, the
    working directory hidden, a writable root inside a read-only path, a denied file with
    other names."""
    _refuse_nested(
        rules,
        [*writes, *reads],
        denies,
        "denied",
        "the sandbox cannot show part of what it hides",
        "Deny the paths beside it instead.",
    )
    for hidden in denies:
        if hidden == cwd or hidden in cwd.parents:
            raise _refuse(
                rules[hidden][1],
                f"the working directory {cwd} is inside the denied {hidden}; commands could "
                "not run there",
                "Deny the paths beside the working directory instead.",
            )
    _refuse_nested(
        rules,
        writes,
        reads,
        "read-only",
        "a writable root inside a read-only path is not supported",
        "Make the read-only rule narrower.",
    )
    for path in denies:
        _check_links(path, rules[path][1])


def _refuse_nested(
    rules: _RuleMap, inner: list[Path], outer: list[Path], what: str, why: str, fix: str
) -> None:
    """Refuse the first path of `inner` that lies inside one of `outer`."""
    for path in inner:
        for parent in outer:
            if parent in path.parents:
                raise _refuse(rules[path][1], f"{path} is inside the {what} {parent}; {why}", fix)


def _network_enabled(name: str, network: dict[str, Any]) -> bool:
    """`[permissions.<name>.network]`: only `enabled`, as the network is either on or off."""
    enabled = network.get("enabled", False)
    other = sorted(k for k in network if k != "enabled")
    if other:
        raise _refuse(
            f"permissions.{name}.network.{other[0]}",
            "domain, socket and proxy rules need Codex's network proxy, which oiexec does not "
            "have: the network is either on or off",
            "Use `enabled = true` or `enabled = false` alone.",
        )
    if not isinstance(enabled, bool):
        raise _refuse(f"permissions.{name}.network.enabled", "expected true or false", None)
    return enabled


def _check_links(path: Path, rule: str) -> None:
    """A denied file that has other names (hard links) would still be readable through
    them: the sandbox hides a path, not the file."""
    real = Path(os.path.realpath(path))
    try:
        info = real.stat()
    except OSError:
        return  # nothing there now; each command looks again
    if real.is_file() and info.st_nlink > 1:
        raise _refuse(
            rule,
            f"{path} has {info.st_nlink} hard links; the sandbox hides a path, and the file "
            "stays readable under its other names",
            "Remove the other links, or deny the directories that hold them too.",
        )


def _access(value: Any, rule: str) -> Access:
    word = _ACCESS_WORDS.get(value) if isinstance(value, str) else None
    if word is None:
        raise _refuse(rule, f"expected one of read, write, deny; got {value!r}", None)
    return word


def _absolute(text: str, rule: str) -> Path:
    path = Path(text).expanduser()
    if not path.is_absolute():
        raise _refuse(
            rule,
            f"`{text}` is not an absolute path",
            'Write it in full (or `~/...`), or put it under ":workspace_roots".',
        )
    if ".." in path.parts:
        # Dropping `dir/..` by name could name another file than the kernel reaches when
        # `dir` is a symlink: a deny rule would hide the wrong path.
        raise _refuse(rule, f"`{text}` goes up with `..`", "Write the path without `..`.")
    return Path(os.path.normpath(path))


def _refuse(rule: str, why: str, fix: str | None) -> ConfigError:
    return ConfigError(f"permission profile rule `{rule}`: {why}", hint=fix)


#: Tool implementations that read files in the runner process, outside the command sandbox.
IN_PROCESS_READERS = frozenset({"fs_read", "glob", "grep", "list", "str_replace_editor"})


def apply_profile(
    policy: SandboxPolicy,
    name: str | None,
    profiles: Mapping[str, PermissionProfile],
    *,
    sandbox_mode_origin: str | None,
    bypass: bool,
    environ: Mapping[str, str],
    add_dirs: tuple[Path, ...] = (),
) -> SandboxPolicy:
    """`policy` with the permission profile `name` (`default_permissions`) of `profiles`
    (`permissions`), if any. `--add-dir` directories stay writable roots on top of a profile
    that writes. Takes the two values, not the settings, so this module stays below them."""
    if name is None:
        return policy
    if bypass:
        raise ConfigError(
            f'default_permissions = "{name}" and --dangerously-bypass-approvals-and-sandbox '
            "are both given: the bypass would drop the profile's rules",
            hint="Leave out one of them.",
        )
    if sandbox_mode_origin is not None:
        # Codex lets sandbox_mode win and ignores the profile; dropping its deny rules
        # silently is what this project's sandbox never does.
        raise ConfigError(
            f'default_permissions = "{name}" and sandbox_mode (from {sandbox_mode_origin}) are '
            "both set: Codex would use sandbox_mode and drop the profile's rules",
            hint="Remove sandbox_mode (or -s), or default_permissions.",
        )
    rules = compile_profile(name, profiles, policy.cwd, dict(environ))
    added = tuple(d if d.is_absolute() else policy.cwd / d for d in add_dirs)
    for directory in added:
        for hidden in rules.deny:
            if hidden == directory or hidden in directory.parents:
                raise ConfigError(
                    f"--add-dir {directory} is inside {hidden}, which permission profile "
                    f"`{name}` denies",
                    hint="Add another directory, or change the profile.",
                )
    return dataclasses.replace(
        policy,
        mode=rules.mode,
        profile=rules.name,
        cwd_writable=rules.cwd_writable,
        extra_roots=(*rules.extra_roots, *(d for d in added if d not in rules.extra_roots)),
        read_only_paths=rules.read_only,
        deny_paths=rules.deny,
        network_access=rules.network,
        exclude_slash_tmp=not rules.slash_tmp_writable,
        exclude_tmpdir_env_var=not rules.tmpdir_writable,
    )


def refuse_unenforceable(policy: SandboxPolicy, backend: str, reading_tools: list[str]) -> None:
    """A `ConfigError` when the chosen backend or harness would let a profile's read-only or
    deny rule go unenforced (only bwrap mounts over a path inside what it lets commands see)."""
    if not policy.hides_paths:
        return
    rule = "deny" if policy.deny_paths else "read-only"
    first = (policy.deny_paths or policy.read_only_paths)[0]
    if backend not in ("bwrap", "unavailable"):
        why = {
            "landlock": "Landlock only grants access, so it cannot take a path back from "
            "inside a tree commands may read or write",
            "seatbelt": "the macOS sandbox here does not apply profile path rules yet",
        }.get(backend, f"the `{backend}` backend does not apply profile path rules")
        raise ConfigError(
            f"permission profile `{policy.profile}`: the {rule} rule for {first} cannot be "
            f"enforced: {why}",
            hint='Use bwrap (sandbox_backend = "bwrap"; `interpreter sandbox doctor` says why '
            "it is unavailable), or remove the rule.",
        )
    if policy.deny_paths and reading_tools:
        raise ConfigError(
            f"permission profile `{policy.profile}`: deny rules (such as {first}) need every "
            "file read to go through the command sandbox, and this harness reads files in "
            f"the runner process ({', '.join(reading_tools)})",
            hint='Use harness = "native" (reads go through its sandboxed shell), or remove the '
            "deny rules.",
        )
