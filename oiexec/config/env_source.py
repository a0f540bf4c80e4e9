"""pydantic-settings' environment source, reading one prefix's config variables.

Apart from `oiexec.config.environment` because pydantic-settings (with dotenv and all its
sources, cloud ones included) costs a run 27 modules that a run without config variables has
no use for: it is imported only when the environment sets one. Only its public API is used:
the source's constructor arguments, its `env_vars` and `prepare_field_value`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, EnvSettingsSource, SettingsConfigDict

from oiexec.config.settings import Settings
from oiexec.core.errors import ConfigError

__all__ = ["read_prefix"]


class _SettingsView(Settings, BaseSettings):
    """`Settings`' fields as pydantic-settings wants them; never instantiated.

    Not strict: for a strict model the source converts text to the field's type with lax
    rules (`yes` would become `true`). Here the text stays text and
    `oiexec.config.envtext` reads it strictly. (The source would still convert a field whose
    union has a `Strict` member, whatever the model's strictness; the settings tree has none.)
    No schema is built: nothing is validated against the view (`Settings` itself validates
    the merged layers)."""

    model_config = SettingsConfigDict(strict=False, defer_build=True)


def read_prefix(prefix: str, variables: Mapping[str, str], delimiter: str) -> dict[str, Any]:
    """`variables` (all named `<prefix>…`, nested keys' parts joined by `delimiter`) as nested
    config data, each value still text except tables and lists given whole as JSON."""
    return _PrefixSource(prefix, variables, delimiter)()


class _PrefixSource(EnvSettingsSource):
    """The environment source for one prefix, over the chosen variables only."""

    def __init__(self, prefix: str, variables: Mapping[str, str], delimiter: str) -> None:
        self._variables = variables
        self._delimiter = delimiter
        super().__init__(
            _SettingsView,
            case_sensitive=False,
            env_prefix=prefix,
            env_nested_delimiter=delimiter,
        )
        # The source loads all of os.environ; this layer reads what it was given (names in
        # lower case, as the source keeps them when it is not case-sensitive).
        self.env_vars = {name.lower(): value for name, value in variables.items()}

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
                if name.lower() == own or name.lower().startswith(own + self._delimiter)
            )
            key = field_name
            if len(names) == 1:
                key = ".".join(names[0][len(self.env_prefix) :].lower().split(self._delimiter))
            raise ConfigError(
                f"invalid configuration: `{key}` in environment variable "
                f"{' or '.join(names)}: not valid JSON ({exc})",
                hint="Give a table or a list as JSON, e.g. "
                f"{self.env_prefix}SANDBOX_WORKSPACE_WRITE__WRITABLE_ROOTS='[\"/data\"]'.",
            ) from None
