"""Test-only switches of the sandbox, refused in production.

The escape suite has to simulate hosts it is not running on (no user namespaces, masked
/proc, a broken bwrap). Those switches live in the environment, where a CI job or a planted
`.env` could also set them and quietly weaken the sandbox of a real run. So they are honoured
only when `OIEXEC_SANDBOX_TEST_HOOKS=1` says "this is the test suite"; set without it, the
run stops with a config error naming the variable. Users pick a backend with the
`sandbox_backend` config key (or `--backend`), never with these.
"""

from __future__ import annotations

import os

from oiexec.core.errors import ConfigError

SWITCH = "OIEXEC_SANDBOX_TEST_HOOKS"
BWRAP = "OI_SANDBOX_BWRAP"
FAULTS = "OI_SANDBOX_FAULTS"
#: Read by earlier versions; now replaced by `sandbox_backend`.
RETIRED_BACKEND = "OI_SANDBOX_BACKEND"
#: `landlock-abi-5`: the kernel's Landlock ABI seen as at most 5 (no scoping), as on Linux < 6.12.
KNOWN_FAULTS = frozenset({"no-userns", "no-proc", "no-netns", "no-landlock", "landlock-abi-5"})


def enabled() -> bool:
    return os.environ.get(SWITCH) == "1"


def check() -> None:
    """Raise `ConfigError` if a test hook is set outside the test suite (or is malformed)."""
    if os.environ.get(RETIRED_BACKEND):
        raise ConfigError(
            f"{RETIRED_BACKEND} is no longer read: choose the backend with "
            'sandbox_backend = "auto" | "bwrap" | "landlock" in config.toml, '
            "-c sandbox_backend=..., or `interpreter sandbox --backend ...`",
            hint=f"unset {RETIRED_BACKEND}",
        )
    present = [name for name in (BWRAP, FAULTS) if os.environ.get(name)]
    if present and not enabled():
        names = ", ".join(present)
        raise ConfigError(
            f"{names}: test-only sandbox hook(s) set in the environment of a real run; "
            "they would weaken or replace the sandbox, so the run is refused",
            hint=f"unset {names} (the test suite sets {SWITCH}=1 to use them)",
        )
    unknown = faults() - KNOWN_FAULTS
    if unknown:
        raise ConfigError(
            f"{FAULTS}: unknown fault(s) {', '.join(sorted(unknown))}; "
            f"known: {', '.join(sorted(KNOWN_FAULTS))}"
        )


def faults() -> set[str]:
    """Simulated host failures (empty unless the test switch is on)."""
    if not enabled():
        return set()
    raw = os.environ.get(FAULTS, "")
    return {f.strip() for f in raw.split(",") if f.strip()}


def bwrap_override() -> str | None:
    """A bwrap binary the tests substitute (None unless the test switch is on)."""
    if not enabled():
        return None
    return os.environ.get(BWRAP) or None
