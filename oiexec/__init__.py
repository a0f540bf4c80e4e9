"""oiexec: the headless runner behind `interpreter exec`, and its Python API.

`from oiexec import Agent` (and the other names in `__all__`) loads the API on first use, so
`import oiexec` and `interpreter --version` stay as fast as before.
"""

from __future__ import annotations

import importlib

from oiexec.core.version import __version__

#: `typing.TYPE_CHECKING` without importing `typing` (mypy honours any constant of this name).
TYPE_CHECKING = False


if TYPE_CHECKING:
    from oiexec.api import (
        Agent,
        Input,
        LocalImageInput,
        ReviewResult,
        StreamedTurn,
        TextInput,
        Thread,
        Turn,
    )
    from oiexec.core.errors import (
        CheckFailed,
        ConfigError,
        ExitCode,
        Interrupted,
        LimitExceeded,
        MaxCostExceeded,
        MaxTokensExceeded,
        MaxTurnsExceeded,
        OiexecError,
        ProviderError,
        RunTimedOut,
        SandboxUnavailable,
        SessionError,
        UsageError,
    )

__all__ = [
    "Agent",
    "CheckFailed",
    "ConfigError",
    "ExitCode",
    "Input",
    "Interrupted",
    "LimitExceeded",
    "LocalImageInput",
    "MaxCostExceeded",
    "MaxTokensExceeded",
    "MaxTurnsExceeded",
    "OiexecError",
    "ProviderError",
    "ReviewResult",
    "RunTimedOut",
    "SandboxUnavailable",
    "SessionError",
    "StreamedTurn",
    "TextInput",
    "Thread",
    "Turn",
    "UsageError",
    "__version__",
]

#: The names `oiexec.api` provides; the rest of `__all__` is `oiexec.core.errors`'.
_API = frozenset(
    {"Agent", "Input", "LocalImageInput", "ReviewResult", "StreamedTurn", "TextInput", "Thread"}
    | {"Turn"}
)


if not TYPE_CHECKING:
    # Hidden from type checkers, which see the imports above instead: a module-level
    # `__getattr__` would make them accept any name (`from oiexec import Agnet` as `object`).

    def __getattr__(name: str) -> object:
        # PEP 562: the API and its dependencies (pydantic, the runner) load on first use. By
        # name, through importlib: importing `oiexec` must not import the top of the layering.
        if name in _API:
            return getattr(importlib.import_module("oiexec.api"), name)
        if name in __all__ and name != "__version__":
            return getattr(importlib.import_module("oiexec.core.errors"), name)
        raise AttributeError(f"module 'oiexec' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
