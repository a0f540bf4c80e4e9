"""`interpreter mcp add|get|list|remove`, run as a user would: the real CLI on a real user
config, with Codex's messages, tables, JSON shapes and exit codes, and `list` starting a real
stdio MCP server to show its tools."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from tests.conftest import run_cli
from tests.mcp.test_http import web_url  # noqa: F401  (the streamable-HTTP test server)
from tests.support.mcp_servers import mini

MINI = str(Path(mini.__file__))

USER_CONFIG = """\
# my settings, keep me
model = "gpt-5.5"  # the one I like

[projects."/somewhere"]
trust_level = "trusted"
"""


def _config(oi_home: Path) -> Path:
    return oi_home / "config.toml"


def test_add_get_list_remove_round_trip_keeps_the_rest_of_the_file(
    oi_home: Path, tmp_path: Path
) -> None:
    _config(oi_home).write_text(USER_CONFIG)

    added = run_cli(
        ["mcp", "add", "docs", "--env", "TOKEN=secret", "--", "docs-server", "--port", "4000"],
        cwd=tmp_path,
    )
    assert (added.returncode, added.stdout) == (0, "Added global MCP server 'docs'.\n")
    web = run_cli(
        ["mcp", "add", "web", "--url", "https://example.com/mcp", "--bearer-token-env-var", "TOK"],
        cwd=tmp_path,
    )
    assert web.returncode == 0, web.stderr
    assert _config(oi_home).read_text() == USER_CONFIG + (
        "\n[mcp_servers.docs]\n"
        'command = "docs-server"\n'
        'args = ["--port", "4000"]\n'
        "\n[mcp_servers.docs.env]\n"
        'TOKEN = "secret"\n'
        "\n[mcp_servers.web]\n"
        'url = "https://example.com/mcp"\n'
        'bearer_token_env_var = "TOK"\n'
    )

    listed = run_cli(["mcp", "list", "--no-probe"], cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        "Name  Command      Args         Env          Cwd  Status   Auth       ",
        "docs  docs-server  --port 4000  TOKEN=*****  -    enabled  Unsupported",
        "",
        "Name  Url                      Bearer Token Env Var  Status   Auth        ",
        "web   https://example.com/mcp  TOK                   enabled  Bearer token",
    ]
    assert "secret" not in listed.stdout

    got = run_cli(["mcp", "get", "docs"], cwd=tmp_path)
    assert got.stdout.splitlines() == [
        "docs",
        "  enabled: true",
        "  transport: stdio",
        "  command: docs-server",
        "  args: --port 4000",
        "  cwd: -",
        "  env: TOKEN=*****",
        "  remove: interpreter mcp remove docs",
    ]

    removed = run_cli(["mcp", "remove", "docs"], cwd=tmp_path)
    assert removed.stdout == "Removed global MCP server 'docs'.\n"
    again = run_cli(["mcp", "remove", "docs"], cwd=tmp_path)
    assert (again.returncode, again.stdout) == (0, "No MCP server named 'docs' found.\n")
    run_cli(["mcp", "remove", "web"], cwd=tmp_path)
    # Nothing of ours is left, and nothing of the user's is gone.
    assert _config(oi_home).read_text() == USER_CONFIG


def test_add_replaces_a_server_of_the_same_name_in_place(oi_home: Path, tmp_path: Path) -> None:
    _config(oi_home).write_text(
        "[mcp_servers.a]\n"
        'command = "old"\n'
        'enabled_tools = ["x"]\n'
        "\n[mcp_servers.a.env]\n"
        'K = "v"\n'
        "\n# b comes after a\n"
        "[mcp_servers.b]\n"
        'command = "b"\n'
    )
    assert run_cli(["mcp", "add", "a", "--", "new"], cwd=tmp_path).returncode == 0
    assert _config(oi_home).read_text() == (
        '[mcp_servers.a]\ncommand = "new"\n\n# b comes after a\n[mcp_servers.b]\ncommand = "b"\n'
    )


def test_a_linked_config_stays_a_link(oi_home: Path, tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "config.toml").write_text(USER_CONFIG)
    (dotfiles / "config.toml").chmod(0o640)
    _config(oi_home).symlink_to(dotfiles / "config.toml")

    assert run_cli(["mcp", "add", "docs", "--", "docs-server"], cwd=tmp_path).returncode == 0
    assert _config(oi_home).is_symlink()
    assert (dotfiles / "config.toml").read_text() == (
        USER_CONFIG + '\n[mcp_servers.docs]\ncommand = "docs-server"\n'
    )
    assert (dotfiles / "config.toml").stat().st_mode & 0o777 == 0o640
    assert run_cli(["mcp", "remove", "docs"], cwd=tmp_path).returncode == 0
    assert _config(oi_home).is_symlink()
    assert (dotfiles / "config.toml").read_text() == USER_CONFIG


def test_json_shapes_are_codexs(oi_home: Path, tmp_path: Path) -> None:
    _config(oi_home).write_text(
        "[mcp_servers.docs]\n"
        'command = "docs-server"\n'
        'args = ["--port", "4000"]\n'
        'env_vars = ["APP_TOKEN"]\n'
        "startup_timeout_sec = 20\n"
        'enabled_tools = ["search"]\n'
        "\n[mcp_servers.docs.env]\n"
        'TOKEN = "secret"\n'
        "\n[mcp_servers.web]\n"
        'url = "https://example.com/mcp"\n'
        "enabled = false\n"
        'http_headers = { "X-Team" = "core" }\n'
    )
    listed = run_cli(["mcp", "list", "--json", "--no-probe"], cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == [
        {
            "name": "docs",
            "enabled": True,
            "disabled_reason": None,
            "transport": {
                "type": "stdio",
                "command": "docs-server",
                "args": ["--port", "4000"],
                "env": {"TOKEN": "secret"},
                "env_vars": ["APP_TOKEN"],
                "cwd": None,
            },
            "startup_timeout_sec": 20.0,
            "tool_timeout_sec": None,
            "auth_status": "unsupported",
        },
        {
            "name": "web",
            "enabled": False,
            "disabled_reason": None,
            "transport": {
                "type": "streamable_http",
                "url": "https://example.com/mcp",
                "bearer_token_env_var": None,
                "http_headers": {"X-Team": "core"},
                "env_http_headers": None,
            },
            "startup_timeout_sec": None,
            "tool_timeout_sec": None,
            "auth_status": "unsupported",
        },
    ]
    got = run_cli(["mcp", "get", "docs", "--json"], cwd=tmp_path)
    assert json.loads(got.stdout) == {
        "name": "docs",
        "enabled": True,
        "disabled_reason": None,
        "transport": json.loads(listed.stdout)[0]["transport"],
        "enabled_tools": ["search"],
        "disabled_tools": None,
        "startup_timeout_sec": 20.0,
        "tool_timeout_sec": None,
    }
    text = run_cli(["mcp", "get", "docs"], cwd=tmp_path).stdout
    assert "  env: TOKEN=*****, APP_TOKEN=*****\n" in text
    assert "  enabled_tools: search\n" in text
    assert "  startup_timeout_sec: 20\n" in text
    # A disabled server is one line, as Codex prints it.
    assert run_cli(["mcp", "get", "web"], cwd=tmp_path).stdout == "web (disabled)\n"


def test_a_dotted_server_name_is_accepted_as_codex_accepts_it(
    oi_home: Path, tmp_path: Path
) -> None:
    from oiexec.mcp.naming import qualified_names

    added = run_cli(["mcp", "add", "my.docs", "--", "/usr/bin/true"], cwd=tmp_path)
    assert (added.returncode, added.stdout) == (0, "Added global MCP server 'my.docs'.\n")
    # A quoted key, so the dot is part of the name and not a sub-table.
    assert _config(oi_home).read_text() == '[mcp_servers."my.docs"]\ncommand = "/usr/bin/true"\n'
    listed = run_cli(["mcp", "list", "--no-probe"], cwd=tmp_path)
    assert listed.stdout.splitlines()[1].split()[:2] == ["my.docs", "/usr/bin/true"]
    assert run_cli(["mcp", "get", "my.docs"], cwd=tmp_path).stdout.startswith("my.docs\n")
    removed = run_cli(["mcp", "remove", "my.docs"], cwd=tmp_path)
    assert removed.stdout == "Removed global MCP server 'my.docs'.\n"
    assert _config(oi_home).read_text() == ""
    # The tool names the model sees keep to the characters every wire accepts.
    name = qualified_names([("my.docs", "search")])[("my.docs", "search")]
    assert name == "mcp__my_docs__search"
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name)


def test_bad_input_gets_a_message_and_codexs_exit_code(oi_home: Path, tmp_path: Path) -> None:
    cases = [
        (["mcp", "add", "bad name", "--", "x"], 1, "invalid server name 'bad name'"),
        (["mcp", "add", "x", "--env", "NOEQUALS", "--", "x"], 2, "KEY=VALUE form"),
        (["mcp", "add", "x", "--url", "https://h/mcp", "--", "cmd"], 2, "cannot be used with"),
        (["mcp", "add", "x"], 2, "a server needs a command"),
        (["mcp", "add", "x", "--bearer-token-env-var", "T", "--", "cmd"], 2, "requires --url"),
        (["mcp", "get", "nope"], 1, "No MCP server named 'nope' found."),
        (["mcp", "remove", "a/b"], 1, "invalid server name"),
        (["mcp", "login", "web"], 2, "OAuth login for MCP servers is not supported"),
        (["mcp", "-c", "no-equals", "add", "x", "--", "y"], 2, "Invalid --config value"),
        (["mcp", "logout", "web"], 2, "--bearer-token-env-var"),
    ]
    for args, code, message in cases:
        result = run_cli(args, cwd=tmp_path)
        assert result.returncode == code, (args, result.stderr)
        assert message in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr
    assert not _config(oi_home).exists()


def test_a_broken_user_config_is_a_config_error_and_left_alone(
    oi_home: Path, tmp_path: Path
) -> None:
    _config(oi_home).write_text("model = \n")
    result = run_cli(["mcp", "add", "x", "--", "cmd"], cwd=tmp_path)
    assert result.returncode == 3
    assert "invalid TOML" in result.stderr
    assert _config(oi_home).read_text() == "model = \n"
    # Servers as dotted keys at the top: adding a table there would move `model` under it.
    dotted = 'mcp_servers.a.command = "x"\nmodel = "m"\n'
    _config(oi_home).write_text(dotted)
    result = run_cli(["mcp", "add", "b", "--", "cmd"], cwd=tmp_path)
    assert result.returncode == 3
    assert "without changing other settings" in result.stderr
    assert _config(oi_home).read_text() == dotted


def test_list_with_nothing_configured(oi_home: Path, tmp_path: Path) -> None:
    result = run_cli(["mcp", "list"], cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.startswith("No MCP servers configured yet.")
    assert json.loads(run_cli(["mcp", "list", "--json"], cwd=tmp_path).stdout) == []


def test_list_starts_each_server_and_shows_its_tools(oi_home: Path, tmp_path: Path) -> None:
    for args in (
        ["mcp", "add", "mini", "--", sys.executable, MINI],
        ["mcp", "add", "broken", "--", str(tmp_path / "no-such-server")],
        ["mcp", "add", "off", "--", sys.executable, MINI],
    ):
        assert run_cli(args, cwd=tmp_path).returncode == 0
    with _config(oi_home).open("a") as handle:
        handle.write("enabled = false\n")  # appended to [mcp_servers.off]

    result = run_cli(["mcp", "list"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    probe_lines = result.stdout.split("\n\n")[-1].splitlines()
    assert probe_lines[0].startswith("broken: failed to start: ")
    assert "no-such-server" in probe_lines[0]
    assert re.match(r"mini: started, \d+ tools: echo, image, slow", probe_lines[1])
    assert probe_lines[2] == "off: disabled, not started"

    as_json = run_cli(["mcp", "list", "--json"], cwd=tmp_path)
    assert as_json.returncode == 0, as_json.stderr
    entries = {e["name"]: e for e in json.loads(as_json.stdout)}
    assert entries["mini"]["probe"]["status"] == "started"
    assert {"name": "echo", "description": "Echo the text back."} in entries["mini"]["probe"][
        "tools"
    ]
    assert entries["broken"]["probe"]["status"] == "failed"
    assert entries["off"]["probe"] == {"status": "disabled", "error": None, "tools": []}
    # Codex's fields are all still there.
    assert {"name", "enabled", "transport", "auth_status"} <= set(entries["mini"])


def test_list_reads_every_layer_a_run_reads(oi_home: Path, repo: Path) -> None:
    project = repo / ".openinterpreter"
    project.mkdir()
    (project / "config.toml").write_text('[mcp_servers.proj]\ncommand = "proj-server"\n')

    untrusted = run_cli(["mcp", "list", "--no-probe"], cwd=repo)
    # An untrusted project's servers are not listed (a run would not start them), and the
    # user is told why.
    assert "proj-server" not in untrusted.stdout
    assert "not trusted" in untrusted.stderr

    _config(oi_home).write_text(f'[projects."{repo}"]\ntrust_level = "trusted"\n')
    trusted = run_cli(["mcp", "list", "--no-probe"], cwd=repo)
    assert "proj  proj-server" in trusted.stdout

    overridden = run_cli(
        ["mcp", "-c", 'mcp_servers.extra.command="extra-server"', "list", "--no-probe"], cwd=repo
    )
    assert "extra  extra-server" in overridden.stdout
    got = run_cli(["mcp", "get", "extra", "-c", 'mcp_servers.extra.command="e2"'], cwd=repo)
    assert "  command: e2\n" in got.stdout


def test_an_http_server_added_with_a_token_variable_is_listed_with_its_tools(
    oi_home: Path,
    tmp_path: Path,
    web_url: str,  # noqa: F811  (the fixture imported above)
) -> None:
    added = run_cli(
        ["mcp", "add", "web", "--url", web_url, "--bearer-token-env-var", "WEB_TOKEN"],
        cwd=tmp_path,
    )
    assert added.returncode == 0, added.stderr
    with _config(oi_home).open("a") as handle:
        handle.write('http_headers = { "X-Team" = "blue" }\n')  # the test server wants it too

    listed = run_cli(["mcp", "list"], cwd=tmp_path, env={"WEB_TOKEN": "tok-123"})
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[1].split() == [
        "web",
        web_url,
        "WEB_TOKEN",
        "enabled",
        "Bearer",
        "token",
    ]
    assert listed.stdout.splitlines()[-1] == "web: started, 1 tool: whoami"
    # Without the variable the server cannot start, and the listing says why.
    unset = run_cli(["mcp", "list"], cwd=tmp_path)
    assert "web: failed to start: environment variable `WEB_TOKEN`" in unset.stdout
