"""Sandboxes that confine model-run commands (see sandbox_profiles/README.md)."""

from oiexec.sandbox.base import (
    SANDBOX_MODES,
    NoSandbox,
    PreparedCommand,
    SandboxMode,
    SandboxPolicy,
)
from oiexec.sandbox.select import get_sandbox

__all__ = [
    "SANDBOX_MODES",
    "NoSandbox",
    "PreparedCommand",
    "SandboxMode",
    "SandboxPolicy",
    "get_sandbox",
]
