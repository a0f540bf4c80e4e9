"""In-process harness fixtures: a harness built from its manifest and a tool context on a
temporary workspace (no sandbox), with the events it emits collected."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from oiexec.core.context import ToolContext
from oiexec.core.events import ThreadEvent
from oiexec.core.types import ToolCall, ToolOutput
from oiexec.harness.context import prompt_variables
from oiexec.harness.data import load_spec
from oiexec.harness.manifest import HarnessSetup, ManifestHarness
from tests.conftest import MakeToolContext


@dataclass
class Workspace:
    root: Path
    ctx: ToolContext
    events: list[ThreadEvent] = field(default_factory=list)

    def items(self, item_type: str) -> list[dict[str, Any]]:
        return [
            e.item.model_dump()  # type: ignore[union-attr]
            for e in self.events
            if e.type == "item.completed" and e.item.type == item_type  # type: ignore[union-attr]
        ]


@pytest.fixture
def workspace(tmp_path: Path, tool_context: MakeToolContext) -> Workspace:
    root = tmp_path / "ws"
    root.mkdir()
    events: list[ThreadEvent] = []
    ctx = tool_context(root, events=events, env=dict(os.environ))
    return Workspace(root, ctx, events)


HarnessFactory = Callable[..., ManifestHarness]


@pytest.fixture
def make_harness(workspace: Workspace) -> Iterator[HarnessFactory]:
    built: list[ManifestHarness] = []
    # One moment per test, as a run computes its variables once: harnesses built a second
    # apart must not differ in `$now`.
    now = datetime.now(UTC)

    def make(harness_id: str, *, guidance: bool = True) -> ManifestHarness:
        variables = prompt_variables(workspace.root, shell="/bin/bash", agents_md=None, now=now)
        setup = HarnessSetup(variables=variables, guidance=guidance)
        harness = ManifestHarness(load_spec(harness_id), setup)
        built.append(harness)
        return harness

    yield make
    for harness in built:
        harness.close()


def run_tool(
    harness: ManifestHarness, ws: Workspace, name: str, args: dict[str, Any]
) -> ToolOutput:
    import json

    tool = {t.spec.name: t for t in harness.tools()}[name]
    return tool.run(ToolCall(call_id=f"c_{name}", name=name, arguments=json.dumps(args)), ws.ctx)
