"""Scripted model turns that fix the failing test of the `repo` fixture, one per harness, each
in that harness's own tool names, argument names and action format."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import FIX_PATCH
from tests.support.model_server import Reply, call, reply

RUN_TESTS = "python -m unittest -q"
OLD = "    return a - b\n"
NEW = "    return a + b\n"
UNIFIED = (
    "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n"
    "+    return a + b\n"
)
FINAL = "Fixed add() in calc.py; the tests pass."
SUBMIT_MARKER = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


@dataclass(frozen=True)
class Script:
    steps: Callable[[Path], list[Reply]]
    #: Whether the edit goes through a file tool (a `file_change` item) or through the shell.
    file_tool: bool = True
    #: Whether the test commands are `command_execution` items.
    shell_items: bool = True
    #: The final message, or None when it is the submission (a diff).
    final: str | None = FINAL


def _claude(repo: Path) -> list[Reply]:
    calc = str(repo / "calc.py")
    return [
        reply(
            "Let me run the tests first.",
            tool_calls=[call("Bash", {"command": RUN_TESTS, "description": "Run tests"})],
        ),
        reply(tool_calls=[call("Read", {"file_path": calc})]),
        reply(tool_calls=[call("Edit", {"file_path": calc, "old_string": OLD, "new_string": NEW})]),
        reply(tool_calls=[call("Bash", {"command": RUN_TESTS})]),
        reply(FINAL),
    ]


def _kimi_code(repo: Path) -> list[Reply]:
    calc = str(repo / "calc.py")
    return [
        reply(
            tool_calls=[call("Bash", {"command": RUN_TESTS}, call_id="Bash:0")],
            reasoning="The tests fail; run them first.",
        ),
        reply(tool_calls=[call("Read", {"path": calc}, call_id="Read:1")]),
        reply(
            tool_calls=[
                call(
                    "Edit",
                    {"path": calc, "old_string": OLD, "new_string": NEW},
                    call_id="Edit:2",
                ),
                call("TodoList", {"todos": [{"title": "Fix add", "status": "done"}]}),
            ]
        ),
        reply(tool_calls=[call("Bash", {"command": RUN_TESTS}, call_id="Bash:3")]),
        reply(FINAL),
    ]


def _kimi_cli(repo: Path) -> list[Reply]:
    calc = str(repo / "calc.py")
    return [
        reply(tool_calls=[call("Shell", {"command": RUN_TESTS})], reasoning="Run the tests."),
        reply(tool_calls=[call("ReadFile", {"path": calc})]),
        reply(
            tool_calls=[call("StrReplaceFile", {"path": calc, "edit": {"old": OLD, "new": NEW}})]
        ),
        reply(tool_calls=[call("Shell", {"command": RUN_TESTS})]),
        reply(FINAL),
    ]


def _qwen(repo: Path) -> list[Reply]:
    calc = str(repo / "calc.py")
    return [
        reply(tool_calls=[call("run_shell_command", {"command": RUN_TESTS})]),
        reply(tool_calls=[call("read_file", {"file_path": calc, "offset": 0, "limit": 1})]),
        reply(tool_calls=[call("edit", {"file_path": calc, "old_string": OLD, "new_string": NEW})]),
        reply(tool_calls=[call("run_shell_command", {"command": RUN_TESTS})]),
        reply(FINAL),
    ]


def _opencode(repo: Path) -> list[Reply]:
    calc = str(repo / "calc.py")
    return [
        reply(tool_calls=[call("bash", {"command": RUN_TESTS})]),
        reply(tool_calls=[call("read", {"filePath": calc})]),
        reply(tool_calls=[call("edit", {"filePath": calc, "oldString": OLD, "newString": NEW})]),
        reply(tool_calls=[call("bash", {"command": RUN_TESTS})]),
        reply(FINAL),
    ]


def _deepseek(repo: Path) -> list[Reply]:
    return [
        reply(tool_calls=[call("exec_shell", {"command": RUN_TESTS})]),
        reply(tool_calls=[call("apply_patch", {"patch": UNIFIED})], reasoning="Patch it."),
        reply(tool_calls=[call("exec_shell", {"command": RUN_TESTS})]),
        reply(FINAL),
    ]


def _minimal(repo: Path) -> list[Reply]:
    return [
        reply(tool_calls=[call("exec_command", {"cmd": RUN_TESTS})]),
        reply(tool_calls=[call("apply_patch", {"input": FIX_PATCH})]),
        reply(tool_calls=[call("exec_command", {"cmd": RUN_TESTS})]),
        reply(FINAL),
    ]


def _native(repo: Path) -> list[Reply]:
    from tests.support.model_server import apply_patch_call

    return [
        reply(tool_calls=[call("exec_command", {"cmd": RUN_TESTS})]),
        reply(tool_calls=[apply_patch_call(FIX_PATCH)]),
        reply(tool_calls=[call("exec_command", {"cmd": RUN_TESTS})]),
        reply(FINAL),
    ]


def _swe(repo: Path) -> list[Reply]:
    calc = repo / "calc.py"
    edit = (
        "DISCUSSION\nadd() subtracts; replace the operator.\n\n"
        '<invoke name="str_replace_editor">\n'
        '<parameter name="command">str_replace</parameter>\n'
        f'<parameter name="path">{calc}</parameter>\n'
        f'<parameter name="old_str">{OLD}</parameter>\n'
        f'<parameter name="new_str">{NEW}</parameter>\n'
        "</invoke>"
    )
    return [
        reply(f"DISCUSSION\nFirst run the tests.\n\n```\n{RUN_TESTS}\n```"),
        reply("I think I know the fix."),  # no command: a format error
        reply(f"DISCUSSION\nLook at the code.\n\n```\nstr_replace_editor view {calc}\n```"),
        reply(edit),
        reply(f"DISCUSSION\nRun the tests again.\n\n```\n{RUN_TESTS}\n```"),
        reply("DISCUSSION\nDone.\n\n```\nsubmit\n```"),
        reply("DISCUSSION\nThe review is fine.\n\n```\nsubmit\n```"),
    ]


def _mini(repo: Path) -> list[Reply]:
    fix = "sed -i 's/a - b/a + b/' calc.py"
    return [
        reply("THOUGHT: run the tests.", tool_calls=[call("bash", {"command": RUN_TESTS})]),
        reply("THOUGHT: I will just say it."),  # no call: a format error
        reply("THOUGHT: fix the operator.", tool_calls=[call("bash", {"command": fix})]),
        reply("THOUGHT: check.", tool_calls=[call("bash", {"command": RUN_TESTS})]),
        reply(
            "THOUGHT: done.",
            tool_calls=[call("bash", {"command": f"echo {SUBMIT_MARKER} && echo '{FINAL}'"})],
        ),
    ]


def _mini_text(repo: Path) -> list[Reply]:
    def block(thought: str, command: str) -> Reply:
        return reply(f"THOUGHT: {thought}\n\n```mswea_bash_command\n{command}\n```")

    return [
        block("run the tests.", RUN_TESTS),
        reply(
            "THOUGHT: two at once.\n\n```mswea_bash_command\nls\n```\n\n"
            "```mswea_bash_command\npwd\n```"
        ),
        block("fix the operator.", "sed -i 's/a - b/a + b/' calc.py"),
        block("check.", RUN_TESTS),
        block("done.", f"echo {SUBMIT_MARKER} && echo '{FINAL}'"),
    ]


def _classic(repo: Path) -> list[Reply]:
    fix = (
        "from pathlib import Path\np = Path('calc.py')\n"
        "p.write_text(p.read_text().replace('a - b', 'a + b'))\nprint('patched')"
    )
    return [
        reply(tool_calls=[call("execute", {"language": "shell", "code": RUN_TESTS})]),
        reply(tool_calls=[call("execute", {"language": "python", "code": fix})]),
        # A model without function calling: a Markdown block is run as the fallback.
        reply(f"Let me check.\n\n```shell\n{RUN_TESTS}\n```"),
        reply(FINAL),
    ]


SCRIPTS: dict[str, Script] = {
    "native": Script(_native),
    "claude-code": Script(_claude),
    "claude-code-bare": Script(_claude),
    "zcode": Script(_claude),
    "kimi-code": Script(_kimi_code),
    "kimi-cli": Script(_kimi_cli),
    "qwen-code": Script(_qwen),
    "opencode": Script(_opencode),
    "deepseek-tui": Script(_deepseek),
    "minimal": Script(_minimal),
    "swe-agent": Script(_swe, final=None),
    "mini-swe-agent": Script(_mini, file_tool=False, final=FINAL),
    "mini-swe-agent-text": Script(_mini_text, file_tool=False, final=FINAL),
    "classic": Script(_classic, file_tool=False),
}
