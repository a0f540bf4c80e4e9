"""`Style`: how a tool's typed result is worded for the model.

Tools compute product-neutral results (a read window, a command run, a grep result) and hand
them to the call's `Style`, which turns them into the text one upstream product's models were
tuned on. This base class is the plain wording used when a manifest names no product; each
product overrides what it words differently in its own module under `oiexec/harness/styles/`,
so no tool ever branches on a product name.
"""

from __future__ import annotations

from typing import ClassVar


class Style:
    """The plain wording; subclasses (one per upstream product) override methods."""

    name: ClassVar[str] = "plain"

    def error(self, message: str) -> str:
        """A failed call (bad arguments, a failed edit) in the product's convention."""
        return message

    # --- commands (shell, background tasks, interpreters, exec_command) ------------------

    # --- files (read, write, edit, glob, grep, list, patch, todos) -------------------------
