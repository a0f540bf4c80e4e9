"""Objects named in tables as `module:attribute`, imported when first asked for.

Tables of implementations (tool functions, result wordings, provider wires) name where each
lives instead of importing them all, so a run imports only what it uses.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["load"]


def load(target: str) -> Any:
    """The attribute a `module:attribute` target names, its module imported if need be."""
    module, _, attribute = target.partition(":")
    # `__import__`, not `importlib.import_module`: only the former goes through the import
    # statement's machinery, which `-X importtime` (the start-up tests' probe) records.
    __import__(module)
    return getattr(sys.modules[module], attribute)
