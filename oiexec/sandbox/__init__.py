"""Sandboxes that confine model-run commands (see sandbox_profiles/README.md)."""

from oiexec.sandbox.select import get_sandbox

__all__ = ["get_sandbox"]
