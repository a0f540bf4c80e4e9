"""How a stdio server is launched outside the sandbox (oiexec.mcp.launch): a command in the
workspace (or found there first on PATH) is refused, the one found is started by absolute
path, PATH loses what commands could write, and without a configured `cwd` the server starts
in an empty runner-owned directory, never the workspace."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from oiexec.config.mcp import McpServerConfig
from oiexec.core import programs
from oiexec.mcp.launch import EmptyCwd, LaunchError, stdio_launch


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(programs, "_STATE", programs._State())
    workspace = tmp_path / "ws"
    bin_dir = workspace / "node_modules" / ".bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "docs-mcp").write_text("#!/bin/sh\n")
    (bin_dir / "docs-mcp").chmod(0o755)
    programs.distrust([workspace, tmp_path / "tmp"])
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    (tmp_path / "run").mkdir()
    return workspace


def test_a_server_without_cwd_starts_in_an_empty_dir_of_its_own(ws: Path) -> None:
    config = McpServerConfig(command="sh", args=["-c", "pwd"])
    environ = {"PATH": os.pathsep.join([str(ws / "node_modules" / ".bin"), "/usr/bin", "/bin"])}
    empty = EmptyCwd()
    argv, env, cwd = stdio_launch(config, environ, ws, empty, "mark")
    try:
        assert cwd.parent == ws.parent / "run" and cwd.name.startswith("oiexec-mcp-cwd-")
        assert stat.S_IMODE(cwd.stat().st_mode) == 0o700 and not list(cwd.iterdir())
        assert argv[3] in ("/usr/bin/sh", "/bin/sh") and argv[4:] == ["-c", "pwd"]
        assert env["PATH"] == "/usr/bin:/bin"
    finally:
        empty.remove()
    assert not cwd.exists()


def test_a_configured_cwd_is_kept(ws: Path) -> None:
    config = McpServerConfig(command="/bin/sh", cwd="sub")
    (ws / "sub").mkdir()
    _, _, cwd = stdio_launch(config, {"PATH": "/usr/bin"}, ws, EmptyCwd(), "mark")
    assert cwd == ws / "sub"


@pytest.mark.parametrize(
    ("command", "cwd", "named"),
    [
        ("docs-mcp", None, "`docs-mcp` is found first in"),
        ("./node_modules/.bin/docs-mcp", ".", "`./node_modules/.bin/docs-mcp` lies inside"),
        ("{ws}/node_modules/.bin/docs-mcp", None, "node_modules/.bin/docs-mcp` lies inside"),
    ],
)
def test_a_command_in_the_workspace_is_refused(
    ws: Path, command: str, cwd: str | None, named: str
) -> None:
    config = McpServerConfig(command=command.format(ws=ws), cwd=cwd)
    environ = {"PATH": os.pathsep.join([str(ws / "node_modules" / ".bin"), "/usr/bin"])}
    with pytest.raises(LaunchError, match="command refused: ") as info:
        stdio_launch(config, environ, ws, EmptyCwd(), "mark")
    assert named in str(info.value) and "outside the sandbox" in str(info.value)


def test_the_empty_dir_is_never_in_an_untrusted_root(
    ws: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The runtime dir inside the workspace and /var/tmp as $TMPDIR are passed over.
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(ws))
    programs.distrust([Path("/var/tmp")])
    monkeypatch.setenv("OPENINTERPRETER_HOME", str(tmp_path / "home"))
    empty = EmptyCwd()
    try:
        path = empty.path()
        assert programs.untrusted_holder(path) is None
        assert path.parent == tmp_path / "home" / "run"
    finally:
        empty.remove()
