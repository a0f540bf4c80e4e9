"""`probe_servers` (what `interpreter mcp list` shows), the names the model sees, and the
parts of `[mcp_servers]` only Codex's config shape decides."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from oiexec.config.mcp import McpServerConfig
from oiexec.mcp.launch import process_start
from oiexec.mcp.manager import McpManager
from oiexec.mcp.naming import MAX_TOOL_NAME_LENGTH, qualified_names
from oiexec.mcp.probe import probe_servers
from tests.mcp.conftest import MINI, REPO_ROOT, gone_soon, read_pid


def _mini(*args: str, **keys: object) -> McpServerConfig:
    return McpServerConfig.model_validate(
        {"command": sys.executable, "args": ["-m", MINI, *args], "cwd": str(REPO_ROOT), **keys}
    )


def _sh(script: str, **keys: object) -> McpServerConfig:
    return McpServerConfig.model_validate({"command": "/bin/sh", "args": ["-c", script], **keys})


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_probe_reports_each_server_and_stops_them(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    down = f"http://127.0.0.1:{_closed_port()}/mcp"
    statuses = probe_servers(
        {
            "mini": _mini("--pidfile", str(pidfile), disabled_tools=["crash"]),
            "off": _mini(enabled=False),
            "only": _mini(enabled_tools=["echo", "lookup"], disabled_tools=["lookup"]),
            "bad": _mini("--exit", "2"),
            "slowpoke": _mini("--hang", startup_timeout_sec=1.5),
            "nowhere": _mini(cwd=str(tmp_path / "missing")),
            "down": McpServerConfig(url=down),
            # Dies after an unterminated stderr line: the exit status still comes through.
            "terse": _sh('printf "fatal: no token" >&2; exit 4'),
            # Writes what looks like the wrapper's own report, then never answers.
            "mimic": _sh('echo "oiexec-mcp-exit 9" >&2; exec sleep 30', startup_timeout_sec=1.5),
        },
        cwd=tmp_path,
        timeout=20,
    )
    by_name = {status.name: status for status in statuses}
    assert [status.name for status in statuses] == [
        "mini",
        "off",
        "only",
        "bad",
        "slowpoke",
        "nowhere",
        "down",
        "terse",
        "mimic",
    ]
    mini = by_name["mini"]
    assert (mini.transport, mini.enabled, mini.started, mini.error) == ("stdio", True, True, None)
    tools = {tool.name: tool for tool in mini.tools}
    assert "echo" in tools and "crash" not in tools
    assert tools["echo"].description == "Echo the text back."
    assert tools["delete_all"].annotations == {"readOnlyHint": False, "destructiveHint": True}
    assert (by_name["off"].enabled, by_name["off"].started) == (False, False)
    # enabled_tools keeps only those; disabled_tools then removes (Codex's order).
    assert [tool.name for tool in by_name["only"].tools] == ["echo"]
    assert by_name["bad"].error is not None and "exited with code 2" in by_name["bad"].error
    assert (
        by_name["slowpoke"].error is not None
        and "timed out after 1.5 s" in by_name["slowpoke"].error
    )
    assert by_name["nowhere"].error == f"cwd `{tmp_path / 'missing'}` is not a directory"
    assert (by_name["down"].transport, by_name["down"].error) == (
        "streamable_http",
        f"cannot reach {down}: All connection attempts failed",
    )
    assert by_name["terse"].error == "exited with code 4; stderr: fatal: no token"
    assert by_name["mimic"].error == (
        "timed out after 1.5 s (startup_timeout_sec); stderr: oiexec-mcp-exit 9"
    )
    assert gone_soon(read_pid(pidfile))


def test_names_are_sanitised_capped_and_unique() -> None:
    long_tool = "t" * 80
    names = qualified_names(
        [("mini", "echo"), ("my.server", "do it"), ("a", long_tool), ("a", long_tool + "x")]
    )
    assert names[("mini", "echo")] == "mcp__mini__echo"
    assert names[("my.server", "do it")] == "mcp__my_server__do_it"
    capped = [names[("a", long_tool)], names[("a", long_tool + "x")]]
    assert all(len(name) == MAX_TOOL_NAME_LENGTH for name in capped)
    assert len(set(capped)) == 2 and all(n.startswith("mcp__a__ttt") for n in capped)
    # Stable: the same configuration gives the same names in every run.
    assert qualified_names([("a", long_tool)])[("a", long_tool)] == capped[0]


def test_env_vars_take_codex_table_form() -> None:
    config = McpServerConfig.model_validate(
        {"command": "srv", "env_vars": [{"name": "A"}, {"name": "B", "source": "local"}, "C"]}
    )
    assert config.env_vars == ["A", "B", "C"]


def test_a_process_group_whose_id_was_reused_is_left_alone(tmp_path: Path) -> None:
    """The run kills the server's group by its id when it ends; if the server died long
    before and its id was handed to another process that leads a group of its own, that
    group is not the run's to kill."""
    manager = McpManager({"mini": _mini()}, cwd=tmp_path)
    strangers: list[subprocess.Popen[bytes]] = []
    try:
        [status] = manager.start()
        assert status.started, status.error
        pump = manager._servers["mini"].pump  # what the run recorded about the server
        assert pump is not None and pump.pid is not None
        # Another session leader, started later than the server (a clock tick apart, as a
        # reused id always is).
        while not strangers or process_start(strangers[-1].pid) == pump.leader_start:
            strangers.append(subprocess.Popen(["sleep", "30"], start_new_session=True))
        stranger = strangers[-1]
        real_pid, pump.pid = pump.pid, stranger.pid  # the id now names the stranger
        manager.close()
        assert stranger.poll() is None  # not killed
        assert gone_soon(real_pid)  # the server itself still stopped
    finally:
        manager.close()
        for process in strangers:
            process.kill()
            process.wait()
