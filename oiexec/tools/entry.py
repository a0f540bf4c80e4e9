"""`ToolEntry`: one `[[tools]]` table of a harness manifest, as the tool framework reads it."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from oiexec.tools.table import TABLE, OptionsError, tool_options

if TYPE_CHECKING:
    from oiexec.tools.options import ToolOptions


class ToolEntry(BaseModel):
    """One model-facing tool: its schema comes from `tools.json` by `name`; `impl` names the
    shared implementation; `args` renames model arguments onto the implementation's.

    `options` and `limits` are checked against the implementation's options model
    (`oiexec.tools.table`) when the entry is made, so a misspelt key fails at load."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    impl: str
    args: dict[str, str] = Field(default_factory=dict)
    render: str = "default"
    #: Numbers only; checked with the options, whose model says which keys a tool takes.
    limits: dict[str, Any] = Field(default_factory=dict)
    options: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _options_fit(self) -> ToolEntry:
        # An entry that sets nothing gets the model's defaults, which fit by construction:
        # not checking it keeps the options models unimported on the native path.
        for key, value in self.limits.items():
            if isinstance(value, bool) or not isinstance(value, int):
                raise OptionsError(
                    f"tool `{self.name}` (impl `{self.impl}`): `{key}` in `limits`: a limit is "
                    f"a whole number (got {value!r})"
                )
        if (self.options or self.limits) and self.impl in TABLE:
            tool_options(self.name, self.impl, self.options, self.limits)
        return self

    def tool_options(self) -> ToolOptions:
        """`options` and `limits` as the implementation's options model (an implementation
        outside the table gets the empty model: it reads them untyped)."""
        return self._typed_options

    # Built on first use, once per entry: tools read their options on every call.
    @cached_property
    def _typed_options(self) -> ToolOptions:
        if self.impl not in TABLE:
            from oiexec.tools.options import ToolOptions

            return ToolOptions()
        return tool_options(self.name, self.impl, self.options, self.limits)
