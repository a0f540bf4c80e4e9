"""The `apply_patch` tool: specs, outputs in Codex's shape, file_change items, policy."""

from __future__ import annotations

import json
import re
from pathlib import Path

import lark
import pytest

from oiexec.core.events import FileChangeItem, ItemCompleted, ItemStarted, ThreadEvent
from oiexec.core.policy import SandboxMode, SandboxPolicy
from oiexec.core.types import ToolCall, ToolOutput
from oiexec.harness.data import load_spec, load_tool_schemas
from oiexec.tools.apply_patch import AddFile, Chunk, DeleteFile, Patch, UpdateFile, render_patch
from oiexec.tools.framework import ManifestTool, Runtime
from oiexec.tools.patch_tool import run_patch
from oiexec.tools.style import Style
from tests.conftest import MakeToolContext

PATCH_GRAMMAR = load_tool_schemas("native")["apply_patch"]["format"]["definition"]


def patch_tool(*, freeform: bool = True) -> ManifestTool:
    """`apply_patch` as declared by the native harness (freeform) or the chat-only minimal
    harness (a function taking `input`)."""
    harness = "native" if freeform else "minimal"
    schema = load_tool_schemas(harness)["apply_patch"]
    entry = load_spec(harness).tool("apply_patch")
    return ManifestTool(entry, schema, Runtime(style=Style()), Style())


PATCH = (
    "*** Begin Patch\n"
    "*** Add File: hello.txt\n"
    "+hello\n"
    "*** Update File: b.txt\n"
    "@@\n"
    " one\n"
    "-two\n"
    "+2\n"
    "*** Delete File: c.txt\n"
    "*** End Patch"
)
SUCCESS = re.compile(
    r"Exit code: 0\nWall time: \d+\.\d seconds\nOutput:\n"
    r"Success\. Updated the following files:\nA hello\.txt\nM b\.txt\nD c\.txt\n\Z"
)


class Harness:
    """A real ToolContext whose events are collected."""

    def __init__(
        self, tool_context: MakeToolContext, cwd: Path, mode: SandboxMode = "workspace-write"
    ) -> None:
        self.events: list[ThreadEvent] = []
        policy = SandboxPolicy(
            mode=mode, cwd=cwd, exclude_slash_tmp=True, exclude_tmpdir_env_var=True
        )
        self.ctx = tool_context(cwd, policy=policy, events=self.events)

    def items(self) -> list[tuple[str, FileChangeItem]]:
        found: list[tuple[str, FileChangeItem]] = []
        for event in self.events:
            assert isinstance(event, ItemStarted | ItemCompleted)
            assert isinstance(event.item, FileChangeItem)
            found.append((event.type, event.item))
        return found


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "b.txt").write_text("one\ntwo\n")
    (root / "c.txt").write_text("gone\n")
    return root


def custom(text: str) -> ToolCall:
    return ToolCall(call_id="call_1", name="apply_patch", arguments=text, call_type="custom")


def function(arguments: str) -> ToolCall:
    return ToolCall(call_id="call_2", name="apply_patch", arguments=arguments)


def test_freeform_spec_carries_a_lark_grammar() -> None:
    spec = patch_tool().spec
    assert spec.type == "custom"
    assert spec.name == "apply_patch"
    assert spec.parameters is None
    assert spec.format == {"type": "grammar", "syntax": "lark", "definition": PATCH_GRAMMAR}
    assert "*** Begin Patch" in spec.description


def test_function_spec() -> None:
    spec = patch_tool(freeform=False).spec
    assert spec.type == "function"
    assert spec.format is None
    assert spec.parameters == {
        "type": "object",
        "properties": {"input": {"type": "string", "description": "The entire patch text."}},
        "required": ["input"],
        "additionalProperties": False,
    }


def test_grammar_accepts_canonical_patches_and_rejects_others() -> None:
    parser = lark.Lark(PATCH_GRAMMAR)
    patch = Patch(
        (
            AddFile("a b/c.txt", ("x", "", "  y")),
            DeleteFile("gone.py"),
            UpdateFile(
                "src/m.py",
                (
                    Chunk(((" ", "def f():"), ("-", "  pass"), ("+", "  return 1"))),
                    Chunk(((" ", ""), ("+", "tail")), anchor="class A:", end_of_file=True),
                ),
                move_to="src/n.py",
            ),
            UpdateFile("r.txt", (), move_to="s.txt"),
        )
    )
    parser.parse(render_patch(patch))
    parser.parse(PATCH)
    for bad in ("*** Begin Patch\n*** End Patch\n", "hello\n", PATCH.replace("+hello", "hello")):
        with pytest.raises(lark.exceptions.LarkError):
            parser.parse(bad)


def test_custom_call_applies_and_reports(ws: Path, tool_context: MakeToolContext) -> None:
    h = Harness(tool_context, ws)
    output = patch_tool().run(custom(PATCH), h.ctx)
    assert output.call_id == "call_1"
    assert output.call_type == "custom"
    assert not output.is_error
    assert SUCCESS.match(output.output), output.output
    assert (ws / "hello.txt").read_text() == "hello\n"
    assert (ws / "b.txt").read_text() == "one\n2\n"
    assert not (ws / "c.txt").exists()
    expected = [
        {"path": str(ws / "hello.txt"), "kind": "add"},
        {"path": str(ws / "b.txt"), "kind": "update"},
        {"path": str(ws / "c.txt"), "kind": "delete"},
    ]
    (start_type, started), (end_type, completed) = h.items()
    assert (start_type, end_type) == ("item.started", "item.completed")
    assert started.id == completed.id == "item_0"
    assert started.status == "in_progress"
    assert completed.status == "completed"
    assert [c.model_dump() for c in started.changes] == expected
    assert [c.model_dump() for c in completed.changes] == expected


def test_function_call_takes_the_input_field(ws: Path, tool_context: MakeToolContext) -> None:
    h = Harness(tool_context, ws)
    output = patch_tool(freeform=False).run(function(json.dumps({"input": PATCH})), h.ctx)
    assert output.call_type == "function"
    assert SUCCESS.match(output.output), output.output
    assert (ws / "hello.txt").exists()


def test_function_tool_accepts_a_raw_patch_too(ws: Path, tool_context: MakeToolContext) -> None:
    h = Harness(tool_context, ws)
    output = patch_tool(freeform=False).run(function(PATCH), h.ctx)
    assert SUCCESS.match(output.output), output.output


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ('{"input": ', "not valid JSON"),
        ('{"patch": "x"}', '{"input": "<the patch text>"}'),
        ('{"input": 3}', '{"input": "<the patch text>"}'),
    ],
)
def test_bad_function_arguments_are_explained(
    ws: Path, arguments: str, fragment: str, tool_context: MakeToolContext
) -> None:
    h = Harness(tool_context, ws)
    output = patch_tool(freeform=False).run(function(arguments), h.ctx)
    assert output.is_error
    assert output.output.startswith("apply_patch: ")
    assert fragment in output.output
    assert h.events == []


def test_parse_error_emits_no_item(ws: Path, tool_context: MakeToolContext) -> None:
    h = Harness(tool_context, ws)
    output = patch_tool().run(custom("*** Add File: x\n+x\n*** End Patch"), h.ctx)
    assert output.is_error
    assert output.output.startswith("Invalid patch: The first line of the patch must be")
    assert h.events == []
    assert not (ws / "x").exists()


def test_verification_failure_fails_the_item_and_writes_nothing(
    ws: Path, tool_context: MakeToolContext
) -> None:
    h = Harness(tool_context, ws)
    text = PATCH.replace(" one\n-two", " one\n-three")
    output = patch_tool().run(custom(text), h.ctx)
    assert output.is_error
    assert output.output.startswith("apply_patch verification failed: Failed to find expected")
    assert "-three" in output.output
    assert not (ws / "hello.txt").exists()
    assert (ws / "c.txt").exists()
    (_, started), (end_type, completed) = h.items()
    assert end_type == "item.completed"
    assert started.status == "in_progress"
    assert completed.status == "failed"
    assert completed.id == started.id


def test_git_hooks_are_refused_under_workspace_write(
    ws: Path, tool_context: MakeToolContext
) -> None:
    (ws / ".git" / "hooks").mkdir(parents=True)
    h = Harness(tool_context, ws)
    text = (
        "*** Begin Patch\n*** Add File: ok.txt\n+ok\n"
        "*** Add File: .git/hooks/pre-commit\n+x\n*** End Patch\n"
    )
    output = patch_tool().run(custom(text), h.ctx)
    assert output.is_error
    assert output.output.startswith("apply_patch rejected: cannot add .git/hooks/pre-commit")
    assert list((ws / ".git" / "hooks").iterdir()) == []
    assert not (ws / "ok.txt").exists()
    assert h.items()[-1][1].status == "failed"


def test_read_only_refuses(ws: Path, tool_context: MakeToolContext) -> None:
    h = Harness(tool_context, ws, mode="read-only")
    output = patch_tool().run(custom(PATCH), h.ctx)
    assert output.is_error
    assert "read-only" in output.output
    assert (ws / "b.txt").read_text() == "one\ntwo\n"


def test_write_failure_uses_the_exit_code_shape(ws: Path, tool_context: MakeToolContext) -> None:
    (ws / "blocker").write_text("file\n")
    h = Harness(tool_context, ws)
    text = "*** Begin Patch\n*** Add File: blocker/x.txt\n+x\n*** End Patch"
    output = patch_tool().run(custom(text), h.ctx)
    assert output.is_error
    assert re.match(
        r"Exit code: 1\nWall time: \d+\.\d seconds\nOutput:\napply_patch failed", output.output
    )


def test_run_patch_with_another_workdir(ws: Path, tool_context: MakeToolContext) -> None:
    sub = ws / "pkg"
    sub.mkdir()
    h = Harness(tool_context, ws)
    outcome = run_patch(
        "*** Begin Patch\n*** Add File: m.py\n+x = 1\n*** End Patch", h.ctx, cwd=sub
    )
    assert outcome.ok
    assert outcome.result is not None
    assert (sub / "m.py").read_text() == "x = 1\n"
    assert h.items()[0][1].changes[0].path == str(sub / "m.py")


def test_item_ids_advance_per_call(ws: Path, tool_context: MakeToolContext) -> None:
    h = Harness(tool_context, ws)
    tool = patch_tool()
    first: ToolOutput = tool.run(
        custom("*** Begin Patch\n*** Add File: 1.txt\n+1\n*** End Patch"), h.ctx
    )
    second = tool.run(custom("*** Begin Patch\n*** Add File: 2.txt\n+2\n*** End Patch"), h.ctx)
    assert not first.is_error and not second.is_error
    assert [item.id for _, item in h.items()] == ["item_0", "item_0", "item_1", "item_1"]
