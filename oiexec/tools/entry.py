"""`ToolEntry`: one `[[tools]]` table of a harness manifest, as the tool framework reads it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ToolEntry(BaseModel):
    """One model-facing tool: its schema comes from `tools.json` by `name`; `impl` names the
    shared implementation; `args` renames model arguments onto the implementation's."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    impl: str
    args: dict[str, str] = Field(default_factory=dict)
    render: str = "default"
    limits: dict[str, int] = Field(default_factory=dict)
    options: dict[str, Any] = Field(default_factory=dict)
