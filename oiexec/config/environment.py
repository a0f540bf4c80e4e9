"""The environment layer of configuration, and the other variables the runner reads.

Any config key can be set as `OIEXEC_<KEY>`, or `OPENINTERPRETER_<KEY>` (the Open
Interpreter family's prefix); when both name the same key, `OIEXEC_` wins. A nested key joins
its parts with `__` (`OIEXEC_SANDBOX_WORKSPACE_WRITE__NETWORK_ACCESS=true`); a table or list
may also be given whole as JSON (`OIEXEC_SANDBOX_WORKSPACE_WRITE__WRITABLE_ROOTS='["/data"]'`).
Names are matched without regard to case after the prefix, and an empty variable counts as
unset (CI systems expand missing variables to empty strings). An `OIEXEC_` variable that
names no key is passed on as an unknown key, to be reported like one in a file. The layer
sits between the project's config file and `-c` overrides; `oiexec.config.loader` places it.

Parsing is pydantic-settings' own environment source, pointed at one prefix and at the
variables left after `NOT_CONFIG` is taken out. Its own conversion of text to the field's type
is lax (`yes` would become `true`), so it is turned off and `oiexec.config.envtext` reads the
text strictly instead.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic.fields import FieldInfo
from pydantic_settings import EnvSettingsSource

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
        for name, value in chosen.items():
            _refuse_undecodable(name, value)
        paths = {tuple(name[len(prefix) :].lower().split(_DELIMITER)): name for name in chosen}
        data = read_env_text(Settings, _PrefixSource(prefix, chosen)(), paths)
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


class _PrefixSource(EnvSettingsSource):
    """pydantic-settings' environment source for one prefix, over chosen variables only."""

    def __init__(self, prefix: str, variables: Mapping[str, str]) -> None:
        self._variables = variables
        super().__init__(
            Settings,
            case_sensitive=False,
            env_prefix=prefix,
            env_nested_delimiter=_DELIMITER,
        )

    def _load_env_vars(self) -> Mapping[str, str | None]:
        # The base class reads all of os.environ; this layer reads what it was given.
        return {name.lower(): value for name, value in self._variables.items()}

    def _coerce_env_val_strict(self, field: FieldInfo | None, value: Any) -> Any:
        # pydantic-settings converts text for strict models with lax rules (`yes` -> True);
        # the text stays text here and `read_env_text` reads it strictly.
        return value

    def prepare_field_value(
        self, field_name: str, field: FieldInfo, value: Any, value_is_complex: bool
    ) -> Any:
        try:
            return super().prepare_field_value(field_name, field, value, value_is_complex)
        except (ValueError, RecursionError) as error:
            # A table or list that is not valid JSON (or JSON nested past the interpreter's
            # stack); say which variable, as for a file line.
            exc = "nested too deeply" if isinstance(error, RecursionError) else error
            own = f"{self.env_prefix}{field_name}".lower()
            names = sorted(
                name
                for name in self._variables
                if name.lower() == own or name.lower().startswith(own + _DELIMITER)
            )
            key = field_name
            if len(names) == 1:
                key = ".".join(names[0][len(self.env_prefix) :].lower().split(_DELIMITER))
            raise ConfigError(
                f"invalid configuration: `{key}` in environment variable "
                f"{' or '.join(names)}: not valid JSON ({exc})",
                hint="Give a table or a list as JSON, e.g. "
                f"{self.env_prefix}SANDBOX_WORKSPACE_WRITE__WRITABLE_ROOTS='[\"/data\"]'.",
            ) from None
