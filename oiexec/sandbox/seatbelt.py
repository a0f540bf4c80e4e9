"""macOS: `/usr/bin/sandbox-exec` with the Seatbelt profiles in `sandbox_profiles/macos/`.

The profile text is static (base + read-all + network when on) plus a generated write clause
that refers to paths only through `(param "...")`; the paths themselves are passed with `-D`
after resolving symlinks (`/var` -> `/private/var`), never spliced into the profile.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from oiexec.core.policy import PreparedCommand, SandboxPolicy
from oiexec.sandbox import profiles
from oiexec.sandbox.bwrap import sandbox_env
from oiexec.sandbox.paths import PROTECTED_NAMES, resolve_gitdirs

SANDBOX_EXEC = "/usr/bin/sandbox-exec"


def _real(path: Path) -> str:
    return os.path.realpath(path)


def write_clause(policy: SandboxPolicy) -> tuple[str, dict[str, str]]:
    """The `(allow file-write* ...)` clause and its `-D` parameters."""
    if policy.mode != "workspace-write":
        return "", {}
    params: dict[str, str] = {}
    terms: list[str] = []
    roots: list[str] = []
    for writable in policy.writable_roots():
        real = _real(writable)
        if real not in roots:
            roots.append(real)
    for i, root in enumerate(roots):
        name = f"WRITABLE_ROOT_{i}"
        params[name] = root
        protected: list[str] = []
        for name_ in PROTECTED_NAMES:
            candidate = Path(root) / name_
            protected.append(str(candidate))
            if name_ == ".git":
                protected += [str(p) for p in resolve_gitdirs(candidate)]
        excludes: list[str] = []
        for j, path in enumerate(protected):
            ro = f"WRITABLE_ROOT_{i}_RO_{j}"
            params[ro] = _real(Path(path))
            # Both the subtree and the name itself, so a missing one cannot be created.
            excludes.append(
                f'(require-not (literal (param "{ro}"))) (require-not (subpath (param "{ro}")))'
            )
        terms.append(f'(require-all (subpath (param "{name}")) {" ".join(excludes)})')
    clause = "(allow file-write*\n  " + "\n  ".join(terms) + ")\n" if terms else ""
    return clause, params


def build_profile(policy: SandboxPolicy) -> tuple[str, dict[str, str]]:
    parts = [profiles.read_text("macos/base.sb"), profiles.read_text("macos/read-all.sb")]
    clause, params = write_clause(policy)
    parts.append(clause)
    if not policy.network_disabled:
        parts.append(profiles.read_text("macos/network.sb"))
        params["DARWIN_USER_CACHE_DIR"] = _real(
            Path(os.environ.get("DARWIN_USER_CACHE_DIR", Path.home() / "Library" / "Caches"))
        )
    return "\n".join(p for p in parts if p), params


def seatbelt_argv(policy: SandboxPolicy, argv: list[str]) -> list[str]:
    profile, params = build_profile(policy)
    defines = [f"-D{key}={value}" for key, value in params.items()]
    return [SANDBOX_EXEC, "-p", profile, *defines, "--", *argv]


class SeatbeltSandbox:
    backend = "seatbelt"

    def __init__(self, policy: SandboxPolicy, report: dict[str, Any]) -> None:
        self._policy = policy
        self._report = report

    @property
    def policy(self) -> SandboxPolicy:
        return self._policy

    def prepare(self, argv: list[str], *, cwd: Path, env: dict[str, str]) -> PreparedCommand:
        return PreparedCommand(
            argv=seatbelt_argv(self._policy, argv), env=sandbox_env(self._policy, env), cwd=cwd
        )

    def describe(self) -> dict[str, Any]:
        return dict(self._report)

    def close(self) -> None:
        """Nothing to remove: this backend makes no mount points and keeps the host /tmp."""
