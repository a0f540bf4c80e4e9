"""The environment layer of configuration, and the other variables the runner reads.

Any config key can be set as `OIEXEC_<KEY>`, or `OPENINTERPRETER_<KEY>` (the Open
Interpreter family's prefix); when both name the same key, `OIEXEC_` wins. A nested key joins
its parts with `__` (`OIEXEC_SANDBOX_WORKSPACE_WRITE__NETWORK_ACCESS=true`); a table or list
may also be given whole as JSON (`OIEXEC_SANDBOX_WORKSPACE_WRITE__WRITABLE_ROOTS='["/data"]'`).
Names are matched without regard to case after the prefix, and an empty variable counts as
unset (CI systems expand missing variables to empty strings). An `OIEXEC_` variable that
names no key is passed on as an unknown key, to be reported like one in a file. The layer
sits between the project's config file and `-c` overrides; `oiexec.config.loader` places it.

Parsing is pydantic-settings' own environment source (`oiexec.config.env_source`), pointed
at one prefix and at the variables left after `NOT_CONFIG` is taken out, and imported only
when there are some. Its own conversion of text to the field's type is lax (`yes` would
become `true`), so it is left out and `oiexec.config.envtext` reads the text strictly instead.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from oiexec.config.envtext import read_env_text
from oiexec.config.layers import Layer, deep_merge
from oiexec.config.overrides import nest
from oiexec.config.settings import Settings
from oiexec.core.errors import ConfigError

__all__ = [
    "HOME_ENV",
    "NOT_CONFIG",
    "PREFIXES",
    "RETRY_BASE_DELAY_ENV",
    "default_home",
    "environment_layers",
]

OWN_PREFIX = "OIEXEC_"
#: Lowest precedence first: `OIEXEC_` is applied last, so it wins.
PREFIXES = ("OPENINTERPRETER_", OWN_PREFIX)
#: Between the parts of a nested key: `OIEXEC_SANDBOX_LIMITS__MAX_PROCESSES`.
_DELIMITER = "__"

#: Where config, sessions and AGENTS.md live; it decides where the other layers are read
#: from, so it cannot be one of them.
HOME_ENV = "OPENINTERPRETER_HOME"
#: Test knob: the first retry's backoff in milliseconds (read by `providers.http`).
RETRY_BASE_DELAY_ENV = "OIEXEC_RETRY_BASE_DELAY_MS"

#: Variables carrying a config prefix that are not config keys. They are never read as
#: settings, even if a key of that name is added one day.
NOT_CONFIG = frozenset(
    {
        HOME_ENV,
        RETRY_BASE_DELAY_ENV,
        "OIEXEC_DEBUG",  # the CLI prints tracebacks (oiexec.cli)
        "OIEXEC_SANDBOX_TEST_HOOKS",  # the sandbox's test hooks (oiexec.sandbox.fault_switches)
        "OIEXEC_HEARTBEAT_INTERVAL_MS",  # the transcript heartbeat (oiexec.output.heartbeat)
        "OIEXEC_UPDATE_GOLDEN",  # the harness tests rewrite their golden fixtures
        # Set by the runner for the commands it runs, so a nested run sees them.
        "OPENINTERPRETER_SANDBOX",
        "OPENINTERPRETER_SANDBOX_NETWORK_DISABLED",
        "OPENINTERPRETER_THREAD_ID",
    }
)


def default_home(environ: Mapping[str, str] | None = None) -> Path:
    value = (os.environ if environ is None else environ).get(HOME_ENV)
    return Path(value).expanduser() if value else Path.home() / ".openinterpreter"


def environment_layers(environ: Mapping[str, str]) -> list[Layer]:
    """One layer per prefix that sets anything, lowest precedence first."""
    layers: list[Layer] = []
    for prefix in PREFIXES:
        chosen = {
            name: value
            for name, value in environ.items()
            if name.startswith(prefix) and name not in NOT_CONFIG and value != ""
        }
        if not chosen:
            continue
        for name, value in chosen.items():
            _refuse_undecodable(name, value)
        paths = {tuple(name[len(prefix) :].lower().split(_DELIMITER)): name for name in chosen}
        from oiexec.config.env_source import read_prefix  # pydantic-settings: only when needed

        data = read_env_text(Settings, read_prefix(prefix, chosen, _DELIMITER), paths)
        if prefix == OWN_PREFIX:
            # `OIEXEC_` is this program's alone, so a name that is no key is a typo: it goes
            # into the layer, where the loader reports it like an unknown key in a file.
            # `OPENINTERPRETER_` is shared with the rest of Open Interpreter and is not judged.
            for path, name in paths.items():
                if path[0] not in Settings.model_fields:
                    data = deep_merge(data, nest(list(path), chosen[name]))
        if data:
            layers.append(Layer("environment", data, variables=paths))
    return layers


def _refuse_undecodable(name: str, value: str) -> None:
    """A config variable that is not UTF-8 (its bytes held as lone surrogates) is a config
    error naming it: the value could not be sent to a model, written to JSON or shown."""
    for text in (name, value):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            shown = name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            raise ConfigError(
                f"environment variable {shown} is not valid UTF-8",
                hint="Export it again as UTF-8 text, or unset it.",
            ) from None
