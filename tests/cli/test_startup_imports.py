"""`--version` and `--help` answer at once: they import neither the settings machinery
(pydantic) nor the HTTP stack, which a run pays for and a question about flags should not; and
a run imports nothing it does not use."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import exec_args, run_cli
from tests.support.model_server import ModelServer, call, reply

HEAVY = ("pydantic", "pydantic_settings", "httpx", "rich", "mcp")


@pytest.mark.parametrize("argv", [["--version"], ["exec", "--help"], ["batch", "--help"]])
def test_questions_about_the_cli_import_nothing_a_run_needs(argv: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "oiexec", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))


#: What a plain exec run (no MCP server configured, no batch progress bar) has no use for:
#: the rich/pygments tree arrives through httpx's own command-line client unless the runner
#: keeps it out; structlog (its console renderer, asyncio) no longer writes the run log;
#: pydantic-settings (with asyncio, dotenv and its cloud sources) is needed only to read a
#: config variable; the OpenTelemetry SDK, its exporter and protobuf only with `[otel]`;
#: importlib.metadata (zipfile, csv...) only for pydantic's plugin search, which the CLI
#: answers itself (oiexec/_entry.py); tenacity only once a request is retried; pty and termios
#: only for a `tty` command; `exec review`'s options and Codex's config key list (with
#: argparse) only when named or needed. (`-X
#: importtime` also lists an import refused by a None in sys.modules, so the names are modules
#: loaded only by a real one.)
NOT_FOR_A_RUN = (
    "rich.console", "rich.pretty", "pygments", "mcp", "pydantic_settings", "structlog", "asyncio",
    "opentelemetry", "oiexec.output.otel", "google.protobuf", "requests", "importlib.metadata",
    "tenacity", "pty", "termios", "argparse", "oiexec.cli.review_cmd", "oiexec.config.codex_schema",
)  # fmt: skip


def _run_imports(model_server: ModelServer, repo: Path, env: dict[str, str]) -> set[str]:
    """The modules one scripted exec run imports (it runs one command, then answers)."""
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": "echo hi"})]), reply("done")
    )
    done = run_cli(
        exec_args(model_server, "say hi"),
        cwd=repo,
        env={"PYTHONPROFILEIMPORTTIME": "1", **env},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert [json.loads(line)["type"] for line in done.stdout.splitlines()][-1] == "turn.completed"
    return {
        line.rsplit("|", 1)[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }


def test_an_exec_run_imports_no_terminal_renderer_no_mcp_and_no_settings_sources(
    model_server: ModelServer, repo: Path
) -> None:
    imported = _run_imports(model_server, repo, {})
    assert "oiexec.output.runlog" in imported  # the run log was written
    assert not imported & set(NOT_FOR_A_RUN), sorted(imported & set(NOT_FOR_A_RUN))


def test_a_config_variable_is_read_through_pydantic_settings(
    model_server: ModelServer, repo: Path
) -> None:
    # The environment layer still reads it (the scripted server answers whatever model is
    # named, so the run's success says nothing; the request it received does).
    imported = _run_imports(model_server, repo, {"OIEXEC_MODEL": "model-from-env"})
    assert "pydantic_settings" in imported
    assert model_server.bodies[0]["model"] == "model-from-env"


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_the_version_is_answered_before_the_command_line_is_built(flag: str) -> None:
    from oiexec.core.version import __version__

    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "oiexec", flag],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout == f"interpreter, version {__version__}\n"
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "click" not in imported
    # The same words as click's own version option, which answers when other flags come too.
    both = subprocess.run(
        [sys.executable, "-m", "oiexec", flag, "exec"], capture_output=True, text=True, timeout=60
    )
    assert both.stdout == done.stdout
