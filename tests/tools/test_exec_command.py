"""`exec_command` / `write_stdin` end to end with real processes and a fake event sink."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from oiexec.config.settings import ShellEnvironmentPolicy
from oiexec.core.context import ToolContext
from oiexec.core.errors import SandboxUnavailable
from oiexec.core.events import (
    CommandExecutionItem,
    FileChangeItem,
    ItemCompleted,
    ItemStarted,
    ThreadEvent,
)
from oiexec.core.policy import PreparedCommand, SandboxPolicy
from oiexec.core.redact import clear_secrets, register_secret
from oiexec.core.tokens import approx_tokens, truncate_middle
from oiexec.core.types import ToolCall, ToolOutput, ToolSpec
from oiexec.harness.data import load_spec, load_tool_schemas
from oiexec.tools import exec_command  # noqa: F401 (registers the tools)
from oiexec.tools.framework import ManifestTool, Runtime
from oiexec.tools.process import ProcessRegistry
from oiexec.tools.shell_env import build_command_env
from oiexec.tools.style import Style
from tests.conftest import MakeToolContext


def dead(pid: int, timeout: float = 3.0) -> bool:
    """True once `pid` is gone (or a zombie waiting for init to reap it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except (FileNotFoundError, IndexError):
            return True
        time.sleep(0.02)
    return False


OUTPUT_RE = re.compile(
    r"Chunk ID: [0-9a-f]{6}\n"
    r"Wall time: \d+\.\d{4} seconds\n"
    r"(?P<status>Process exited with code (?P<code>-?\d+)|Process running with session ID "
    r"(?P<sid>\d+))\n"
    r"Original token count: (?P<tokens>\d+)\n"
    r"Output:\n(?P<text>.*)\Z",
    re.DOTALL,
)


class FakeSandbox:
    """A sandbox whose `prepare` is a test-provided function."""

    backend = "fake"

    def __init__(self, policy: SandboxPolicy, prepare: Callable[..., PreparedCommand]) -> None:
        self._policy = policy
        self._prepare = prepare
        self.prepared: list[list[str]] = []

    @property
    def policy(self) -> SandboxPolicy:
        return self._policy

    def prepare(self, argv: list[str], *, cwd: Path, env: dict[str, str]) -> PreparedCommand:
        self.prepared.append(argv)
        return self._prepare(argv, cwd=cwd, env=env)

    def describe(self) -> dict[str, Any]:
        return {"backend": "fake"}


def native_tool(name: str, runtime: Runtime) -> ManifestTool:
    """A tool of the native harness, as its manifest declares it."""
    entry = load_spec("native").tool(name)
    return ManifestTool(entry, load_tool_schemas("native")[name], runtime, Style())


def native_spec(name: str) -> ToolSpec:
    return native_tool(name, Runtime(style=Style())).spec


@dataclass
class Rig:
    ctx: ToolContext
    registry: ProcessRegistry
    exec_tool: ManifestTool
    stdin_tool: ManifestTool
    events: list[ThreadEvent]
    warnings: list[str] = field(default_factory=list)

    def exec(self, **args: Any) -> ToolOutput:
        args.setdefault("login", False)  # skip profile scripts: faster, same behaviour
        return self.exec_tool.run(self.call("exec_command", args), self.ctx)

    def write(self, **args: Any) -> ToolOutput:
        return self.stdin_tool.run(self.call("write_stdin", args), self.ctx)

    @staticmethod
    def call(name: str, args: dict[str, Any] | str) -> ToolCall:
        raw = args if isinstance(args, str) else json.dumps(args)
        return ToolCall(call_id="call_1", name=name, arguments=raw)

    def items(self) -> list[tuple[str, CommandExecutionItem]]:
        found = []
        for event in self.events:
            assert isinstance(event, ItemStarted | ItemCompleted)
            assert isinstance(event.item, CommandExecutionItem)
            found.append((event.type, event.item))
        return found


def make_rig(
    tool_context: MakeToolContext, tmp_path: Path, *, sandbox: Any = None, limit: int = 10_000
) -> Rig:
    events: list[ThreadEvent] = []
    warnings: list[str] = []
    env = build_command_env(
        ShellEnvironmentPolicy(),
        base_env=os.environ,
        provider_env_key=None,
        sandbox_mode="danger-full-access",
        network_disabled=False,
        extra={},
    )
    ctx = tool_context(tmp_path, sandbox=sandbox, events=events, env=env, warn=warnings.append)
    registry = ProcessRegistry()
    ctx.cleanup.callback(registry.close_all)
    runtime = Runtime(style=Style(), processes=registry, output_token_limit=limit)
    return Rig(
        ctx,
        registry,
        native_tool("exec_command", runtime),
        native_tool("write_stdin", runtime),
        events,
        warnings,
    )


@pytest.fixture
def rig(tmp_path: Path, tool_context: MakeToolContext) -> Iterator[Rig]:
    made = make_rig(tool_context, tmp_path)
    with made.ctx.cleanup:
        yield made


def parse(output: ToolOutput) -> re.Match[str]:
    match = OUTPUT_RE.match(output.output)
    assert match, output.output
    return match


# --- schemas -----------------------------------------------------------------------------


def _props(spec: ToolSpec) -> dict[str, Any]:
    assert spec.parameters is not None
    assert spec.parameters["additionalProperties"] is False
    return {k: v["type"] for k, v in spec.parameters["properties"].items()}


def test_schemas_match_codex() -> None:
    exec_spec, stdin_spec = native_spec("exec_command"), native_spec("write_stdin")
    assert _props(exec_spec) == {
        "cmd": "string",
        "workdir": "string",
        "shell": "string",
        "login": "boolean",
        "tty": "boolean",
        "yield_time_ms": "number",
        "max_output_tokens": "number",
        "sandbox_permissions": "string",
        "justification": "string",
        "prefix_rule": "array",
    }
    assert exec_spec.parameters is not None
    assert exec_spec.parameters["required"] == ["cmd"]
    assert _props(stdin_spec) == {
        "session_id": "number",
        "chars": "string",
        "yield_time_ms": "number",
        "max_output_tokens": "number",
    }
    assert stdin_spec.parameters is not None
    assert stdin_spec.parameters["required"] == ["session_id"]
    assert "strict" not in exec_spec.parameters


# --- exec_command ------------------------------------------------------------------------


def test_echo_reports_output_and_items(rig: Rig) -> None:
    out = rig.exec(cmd="echo hi", login=True)
    match = parse(out)
    assert match["code"] == "0"
    assert match["text"] == "hi\n"
    assert match["tokens"] == "1"
    assert not out.is_error
    (kind0, started), (kind1, done) = rig.items()
    assert kind0 == "item.started" and kind1 == "item.completed"
    assert started.command == "/bin/bash -lc 'echo hi'"
    assert (started.aggregated_output, started.exit_code, started.status) == (
        "",
        None,
        "in_progress",
    )
    assert done.id == started.id
    assert (done.aggregated_output, done.exit_code, done.status) == ("hi\n", 0, "completed")


def test_failure_merges_streams_and_marks_item_failed(rig: Rig) -> None:
    out = rig.exec(cmd="echo one; echo two >&2; exit 4")
    match = parse(out)
    assert match["code"] == "4"
    assert match["text"] == "one\ntwo\n"
    done = rig.items()[-1][1]
    assert (done.command, done.exit_code, done.status) == (
        "/bin/bash -c 'echo one; echo two >&2; exit 4'",
        4,
        "failed",
    )


def test_workdir_is_relative_to_cwd(rig: Rig, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    assert parse(rig.exec(cmd="pwd", workdir="sub"))["text"] == f"{tmp_path / 'sub'}\n"
    missing = rig.exec(cmd="pwd", workdir="nope")
    assert missing.is_error and "workdir" in missing.output


@pytest.mark.parametrize(
    ("arguments", "field_name"),
    [
        ("{not json", "JSON"),
        ("{}", "cmd"),
        ('{"cmd": 5}', "cmd"),
        ('{"cmd": "true", "yield_time_ms": "soon"}', "yield_time_ms"),
        ('{"cmd": "true", "tty": "yes"}', "tty"),
        ('{"cmd": "true", "max_output_tokens": -1}', "max_output_tokens"),
        ('{"cmd": "true", "prefix_rule": "git"}', "prefix_rule"),
        ('{"cmd": "true", "sandbox_permissions": "root"}', "sandbox_permissions"),
    ],
)
def test_bad_arguments_name_the_field(rig: Rig, arguments: str, field_name: str) -> None:
    out = rig.exec_tool.run(rig.call("exec_command", arguments), rig.ctx)
    assert out.is_error
    assert field_name in out.output
    assert rig.events == []


def test_long_running_process_is_fed_through_write_stdin(rig: Rig) -> None:
    out = rig.exec(cmd="echo ready; read x; echo got $x", yield_time_ms=1000)
    match = parse(out)
    assert match["sid"] is not None
    assert match["text"] == "ready\n"
    assert [kind for kind, _ in rig.items()] == ["item.started"]

    out = rig.write(session_id=int(match["sid"]), chars="hello\n", yield_time_ms=3000)
    match2 = parse(out)
    assert match2["code"] == "0"
    assert match2["text"] == "got hello\n"
    kind, done = rig.items()[-1]
    assert kind == "item.completed"
    assert (done.aggregated_output, done.exit_code, done.status) == (
        "ready\ngot hello\n",
        0,
        "completed",
    )

    again = rig.write(session_id=int(match["sid"]), chars="")
    assert again.is_error and match["sid"] in again.output


def test_poll_with_empty_chars_returns_when_the_process_exits(rig: Rig) -> None:
    match = parse(rig.exec(cmd="sleep 0.8; echo done", yield_time_ms=250))
    assert match["sid"]
    started = time.monotonic()
    polled = parse(rig.write(session_id=int(match["sid"]), chars="", yield_time_ms=250))
    assert polled["code"] == "0" and polled["text"] == "done\n"
    assert time.monotonic() - started < 4  # the 5 s poll minimum ends early on exit


def test_write_stdin_bad_arguments(rig: Rig) -> None:
    for arguments, field_name in [
        ("{}", "session_id"),
        ('{"session_id": "1000"}', "session_id"),
        ('{"session_id": 1000.5}', "session_id"),
        ('{"session_id": 1000, "chars": 3}', "chars"),
    ]:
        out = rig.stdin_tool.run(rig.call("write_stdin", arguments), rig.ctx)
        assert out.is_error and field_name in out.output, arguments
    unknown = rig.write(session_id=4242)
    assert unknown.is_error and "4242" in unknown.output


def test_tty_mode(rig: Rig) -> None:
    assert "/dev/pts/" in parse(rig.exec(cmd="tty", tty=True))["text"]
    assert parse(rig.exec(cmd="tty"))["text"] == "not a tty\n"


def test_output_is_truncated_head_and_tail(rig: Rig) -> None:
    script = "print('HEAD' + 'x' * 4000 + 'TAIL')"
    match = parse(rig.exec(cmd=f'{sys.executable} -c "{script}"', max_output_tokens=20))
    text = match["text"]
    # Codex 0.171 heads a cut output with its size, then shows head and tail.
    header, text = text.split("\n\n", 1)
    assert header == "Warning: truncated output (original token count: 1003)\nTotal output lines: 1"
    assert text.startswith("HEAD") and text.endswith("TAIL\n")
    assert re.search(r"…\d+ tokens truncated…", text)
    assert len(text) < 200
    assert match["tokens"] == str(approx_tokens("HEAD" + "x" * 4000 + "TAIL\n"))
    # The full output still goes to the JSONL item.
    assert len(rig.items()[-1][1].aggregated_output) == 4009


def test_config_token_limit_caps_the_request(tmp_path: Path, tool_context: MakeToolContext) -> None:
    rig = make_rig(tool_context, tmp_path, limit=5)
    with rig.ctx.cleanup:
        text = parse(rig.exec(cmd="printf 'a%.0s' $(seq 200)", max_output_tokens=10_000))["text"]
    body = text.split("\n\n", 1)[1]  # after the truncation header
    assert "tokens truncated" in body and len(body) < 60


def test_truncate_middle_unit() -> None:
    assert truncate_middle("short", 10) == "short"
    cut = truncate_middle("é" * 100, 10)  # 200 bytes into a 40-byte budget
    assert cut.startswith("é" * 10) and cut.endswith("é" * 10)
    assert "…40 tokens truncated…" in cut
    assert approx_tokens("abcde") == 2


def test_escalation_is_refused_without_running(rig: Rig, tmp_path: Path) -> None:
    out = rig.exec(cmd="touch escalated", sandbox_permissions="require_escalated")
    assert out.is_error
    assert "never" in out.output and "sandbox" in out.output
    assert rig.events == []
    assert len(rig.warnings) == 1
    assert not (tmp_path / "escalated").exists()


def test_refusing_sandbox_declines_and_counts(
    tmp_path: Path, tool_context: MakeToolContext
) -> None:
    def refuse(argv: list[str], *, cwd: Path, env: dict[str, str]) -> PreparedCommand:
        raise SandboxUnavailable("sandbox unavailable: bubblewrap is not installed")

    policy = SandboxPolicy(mode="workspace-write", cwd=tmp_path)
    rig = make_rig(tool_context, tmp_path, sandbox=FakeSandbox(policy, refuse))
    with rig.ctx.cleanup:
        out = rig.exec(cmd="touch ran")
    assert out.is_error
    assert out.output.startswith("sandbox unavailable: bubblewrap is not installed")
    [(kind, item)] = rig.items()
    assert kind == "item.completed"
    assert (item.status, item.exit_code) == ("declined", None)
    assert "bubblewrap is not installed" in item.aggregated_output
    assert not (tmp_path / "ran").exists()


def test_sandbox_setup_failure_is_not_the_commands_result(
    tmp_path: Path, tool_context: MakeToolContext
) -> None:
    def launcher_fails(argv: list[str], *, cwd: Path, env: dict[str, str]) -> PreparedCommand:
        script = "echo 'bwrap: setting up uid map: Permission denied' >&2; exit 125"
        return PreparedCommand(
            argv=["/bin/sh", "-c", script], env=env, cwd=cwd, setup_failure_exit_code=125
        )

    policy = SandboxPolicy(mode="workspace-write", cwd=tmp_path)
    rig = make_rig(tool_context, tmp_path, sandbox=FakeSandbox(policy, launcher_fails))
    with rig.ctx.cleanup:
        out = rig.exec(cmd="echo hi")
    assert out.is_error
    assert out.output.startswith("sandbox setup failed")
    assert "uid map" in out.output
    assert "Process exited" not in out.output
    assert rig.items()[-1][1].status == "failed"


def test_after_notes_reach_the_model_once(tmp_path: Path, tool_context: MakeToolContext) -> None:
    calls: list[int] = []

    def with_tripwire(argv: list[str], *, cwd: Path, env: dict[str, str]) -> PreparedCommand:
        def after() -> list[str]:
            calls.append(1)
            return ["restored .git/hooks/pre-commit"]

        return PreparedCommand(argv=argv, env=env, cwd=cwd, after=after)

    policy = SandboxPolicy(mode="workspace-write", cwd=tmp_path)
    rig = make_rig(tool_context, tmp_path, sandbox=FakeSandbox(policy, with_tripwire))
    with rig.ctx.cleanup:
        out = rig.exec(cmd="echo hi")
        running = parse(rig.exec(cmd="sleep 30", yield_time_ms=250))
        assert calls == [1]
    assert out.output.endswith("\n\nrestored .git/hooks/pre-commit")
    assert running["sid"]
    assert calls == [1, 1]  # the killed session ran its check at close_all


def test_run_deadline_kills_the_command_group(rig: Rig) -> None:
    rig.ctx.deadline = time.monotonic() + 0.8
    started = time.monotonic()
    out = rig.exec(cmd="sleep 30 & echo $!; wait", yield_time_ms=30_000)
    assert time.monotonic() - started < 4
    assert "time limit" in out.output
    match = OUTPUT_RE.match(out.output.split("\n\n")[0])
    assert match and match["code"] == "143"
    assert dead(int(match["text"].split()[0]))
    assert rig.items()[-1][1].status == "failed"


def test_close_all_completes_open_items(tmp_path: Path, tool_context: MakeToolContext) -> None:
    rig = make_rig(tool_context, tmp_path)
    with rig.ctx.cleanup:
        match = parse(rig.exec(cmd="echo $$; sleep 30", yield_time_ms=1000))
        pid = int(match["text"])
        assert [kind for kind, _ in rig.items()] == ["item.started"]
    kind, done = rig.items()[-1]
    assert kind == "item.completed"
    assert done.status == "failed" and done.exit_code == 143
    assert done.aggregated_output == f"{pid}\n"
    assert dead(pid)


def test_background_child_holding_stdout_does_not_hang(
    tmp_path: Path, tool_context: MakeToolContext
) -> None:
    rig = make_rig(tool_context, tmp_path)
    with rig.ctx.cleanup:
        started = time.monotonic()
        match = parse(rig.exec(cmd="sleep 30 & echo $!", yield_time_ms=10_000))
        assert time.monotonic() - started < 3
        assert match["code"] == "0"
        child = int(match["text"])
        assert rig.items()[-1][1].status == "completed"
    assert dead(child)


def test_secrets_are_redacted_from_output(rig: Rig) -> None:
    register_secret("sk-test-very-secret")
    try:
        out = rig.exec(cmd="echo key=sk-test-very-secret")
    finally:
        clear_secrets()
    assert "sk-test-very-secret" not in out.output
    assert "[REDACTED]" in out.output
    assert "sk-test-very-secret" not in rig.items()[-1][1].aggregated_output


def test_apply_patch_heredoc_is_applied_as_a_patch(rig: Rig, tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"
    cmd = f"cd pkg && apply_patch <<'EOF'\n{patch}EOF"
    out = rig.exec(cmd=cmd)
    assert not out.is_error and out.output.startswith("Exit code: 0\n"), out.output
    assert out.call_type == "function"
    assert (tmp_path / "pkg" / "a.txt").read_text() == "hi\n"
    kinds = [type(e.item) for e in rig.events if isinstance(e, ItemStarted | ItemCompleted)]
    assert kinds == [FileChangeItem, FileChangeItem]
    # Anything else still runs in the shell.
    rig.events.clear()
    assert parse(rig.exec(cmd="echo plain"))["text"] == "plain\n"
