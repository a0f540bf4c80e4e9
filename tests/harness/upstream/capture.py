"""Capture the tools real upstream coding agents send, as JSON fixtures.

Each client runs once, non-interactively, against the scripted model server
(tests/support/model_server/) on the wire it speaks; the first model request that offers
tools is recorded and the client is stopped. Only names, parameter names, types, enums and
required lists are kept: descriptions and other prose are stripped, so no upstream text is
committed. See harnesses/UPSTREAM.md for how to install the clients and repeat this.

    python -m tests.harness.upstream.capture --npm-dir /tmp/oiexec-upstream/npm \\
        --venv /tmp/oiexec-upstream/venv [--only claude-code]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.model_server import ModelServer, ScriptedModel, reply

FIXTURES = Path(__file__).parent / "fixtures"
#: Keys dropped everywhere: prose that would copy upstream text into this repository.
_PROSE_KEYS = frozenset({"description", "title", "examples", "$comment", "markdownDescription"})
_CLIENT_TIMEOUT = 120.0


@dataclass(frozen=True)
class Client:
    """One upstream client: how to find its version and how to start it."""

    name: str
    harness: str
    wire: str
    version: Callable[[Path, Path], str]
    #: (npm dir, venv, server, home, working directory, prompt) -> argv and environment.
    command: Callable[[Path, Path, ModelServer, Path, Path, str], tuple[list[str], dict[str, str]]]


def _npm_version(package: str) -> Callable[[Path, Path], str]:
    def version(npm_dir: Path, venv: Path) -> str:
        manifest = npm_dir / "node_modules" / package / "package.json"
        return str(json.loads(manifest.read_text())["version"])

    return version


def _pip_version(package: str) -> Callable[[Path, Path], str]:
    def version(npm_dir: Path, venv: Path) -> str:
        out = subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "show", package],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return next(line.split(":", 1)[1].strip() for line in out.splitlines() if "Version" in line)

    return version


def _base_env(home: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "TERM": "dumb",
        "LANG": "C.UTF-8",
        "NO_COLOR": "1",
        "CI": "1",
    }


def _claude(
    npm: Path, venv: Path, server: ModelServer, home: Path, cwd: Path, prompt: str
) -> tuple[list[str], dict[str, str]]:
    env = _base_env(home)
    env.update(
        ANTHROPIC_BASE_URL=server.url,
        ANTHROPIC_API_KEY="sk-ant-capture-0000",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_TELEMETRY="1",
    )
    argv = [
        str(npm / "node_modules/.bin/claude"),
        "-p",
        prompt,
        "--model",
        "claude-sonnet-4-5",
    ]
    return argv, env


def _codex(
    npm: Path, venv: Path, server: ModelServer, home: Path, cwd: Path, prompt: str
) -> tuple[list[str], dict[str, str]]:
    env = _base_env(home)
    codex_home = home / ".codex"
    codex_home.mkdir(exist_ok=True)
    env.update(CODEX_HOME=str(codex_home), SCRIPTED_KEY="sk-capture-0000")
    argv = [
        str(npm / "node_modules/.bin/codex"),
        "exec",
        "--skip-git-repo-check",
        "-m",
        "gpt-5.5",
        "-c",
        'model_provider="scripted"',
        "-c",
        'model_providers.scripted.name="Scripted"',
        "-c",
        f'model_providers.scripted.base_url="{server.base_url}"',
        "-c",
        'model_providers.scripted.wire_api="responses"',
        "-c",
        'model_providers.scripted.env_key="SCRIPTED_KEY"',
        prompt,
    ]
    return argv, env


def _opencode(
    npm: Path, venv: Path, server: ModelServer, home: Path, cwd: Path, prompt: str
) -> tuple[list[str], dict[str, str]]:
    env = _base_env(home)
    config = {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            "scripted": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Scripted",
                "options": {"baseURL": server.base_url, "apiKey": "sk-capture-0000"},
                "models": {"scripted-model": {"name": "Scripted", "tool_call": True}},
            }
        },
        "model": "scripted/scripted-model",
        "autoupdate": False,
        "share": "disabled",
    }
    # The user-level config, so the working directory holds only the session's files.
    config_dir = home / ".config" / "opencode"
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "opencode.json").write_text(json.dumps(config))
    env.update(OPENCODE_DISABLE_AUTOUPDATE="1", OPENCODE_DISABLE_LSP_DOWNLOAD="1")
    argv = [str(npm / "node_modules/.bin/opencode"), "run", prompt]
    return argv, env


def _qwen(
    npm: Path, venv: Path, server: ModelServer, home: Path, cwd: Path, prompt: str
) -> tuple[list[str], dict[str, str]]:
    env = _base_env(home)
    env.update(
        OPENAI_BASE_URL=server.base_url,
        OPENAI_API_KEY="sk-capture-0000",
        OPENAI_MODEL="qwen3-coder-plus",
    )
    argv = [
        str(npm / "node_modules/.bin/qwen"),
        "--auth-type",
        "openai",
        "--yolo",
        "-p",
        prompt,
    ]
    return argv, env


def _mini(
    npm: Path, venv: Path, server: ModelServer, home: Path, cwd: Path, prompt: str
) -> tuple[list[str], dict[str, str]]:
    env = _base_env(home)
    env.update(
        MSWEA_CONFIGURED="true",
        MSWEA_COST_TRACKING="ignore_errors",
        OPENAI_API_KEY="sk-capture-0000",
        OPENAI_API_BASE=server.base_url,
        OPENAI_BASE_URL=server.base_url,
        LITELLM_LOCAL_MODEL_COST_MAP="True",
    )
    argv = [
        str(venv / "bin" / "mini"),
        "--model",
        "openai/scripted-model",
        "--task",
        prompt,
        "--yolo",
        "--exit-immediately",
    ]
    return argv, env


CLIENTS: tuple[Client, ...] = (
    Client(
        "claude-code", "claude-code", "messages", _npm_version("@anthropic-ai/claude-code"), _claude
    ),
    Client("codex", "native", "responses", _npm_version("@openai/codex"), _codex),
    Client("opencode", "opencode", "chat", _npm_version("opencode-ai"), _opencode),
    Client("qwen-code", "qwen-code", "chat", _npm_version("@qwen-code/qwen-code"), _qwen),
    Client("mini-swe-agent", "mini-swe-agent", "chat", _pip_version("mini-swe-agent"), _mini),
)


def strip_prose(schema: Any, *, in_properties: bool = False) -> Any:
    """`schema` without descriptions and other prose; property names are kept as they are."""
    if isinstance(schema, dict):
        return {
            key: strip_prose(value, in_properties=key in ("properties", "$defs", "definitions"))
            for key, value in schema.items()
            if in_properties or key not in _PROSE_KEYS
        }
    if isinstance(schema, list):
        return [strip_prose(item) for item in schema]
    return schema


def normalize_tools(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tools of a Responses, Chat or Messages request body as {name, type, parameters}."""
    tools: list[dict[str, Any]] = []
    for tool in body.get("tools") or []:
        function = tool.get("function")
        if isinstance(function, dict):  # chat
            entry = {"name": function["name"], "type": "function"}
            entry["parameters"] = strip_prose(function.get("parameters") or {})
        elif "input_schema" in tool:  # messages
            entry = {"name": tool["name"], "type": "function"}
            entry["parameters"] = strip_prose(tool["input_schema"])
        elif tool.get("type") == "function":  # responses
            entry = {"name": tool["name"], "type": "function"}
            entry["parameters"] = strip_prose(tool.get("parameters") or {})
        elif tool.get("type") == "custom":
            fmt = tool.get("format") or {}
            # The grammar itself is upstream text; its kind is the fact worth keeping.
            entry = {"name": tool["name"], "type": "custom"}
            entry["format"] = {k: v for k, v in fmt.items() if k != "definition"}
        else:  # hosted tools (web_search, tool_search, ...)
            entry = {"name": tool.get("name") or tool.get("type"), "type": tool.get("type")}
            if isinstance(tool.get("parameters"), dict):
                entry["parameters"] = strip_prose(tool["parameters"])
        tools.append(entry)
    return sorted(tools, key=lambda t: str(t["name"]))


def _tools_request(server: ModelServer) -> dict[str, Any] | None:
    """The model request offering the most tools (clients send small side requests too)."""
    bodies = [b for b in server.bodies if isinstance(b, dict) and b.get("tools")]
    return max(bodies, key=lambda b: len(b["tools"])) if bodies else None


def capture(client: Client, npm_dir: Path, venv: Path, out_dir: Path) -> Path:
    version = client.version(npm_dir, venv)
    model = ScriptedModel(*[reply("Hello.") for _ in range(50)])
    with ModelServer(model) as server, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "home").mkdir()
        argv, env = client.command(npm_dir, venv, server, work / "home", work, "Say hello.")
        started = time.monotonic()
        process = subprocess.Popen(
            argv,
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            while time.monotonic() - started < _CLIENT_TIMEOUT and process.poll() is None:
                # Side requests (titles, summaries) may come first; give the main one time.
                if _tools_request(server) is not None:
                    time.sleep(2.0)
                    break
                time.sleep(0.2)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            output = process.communicate()[0].decode("utf-8", errors="replace")
        body = _tools_request(server)
        if body is None:
            paths = [f"{r.method} {r.path}" for r in server.requests]
            raise RuntimeError(
                f"{client.name} {version} sent no tools; requests: {paths}\n{output[-3000:]}"
            )
    fixture = {
        "client": client.name,
        "version": version,
        "harness": client.harness,
        "wire": client.wire,
        "model": body.get("model"),
        "tools": normalize_tools(body),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{client.name}-{version}.json"
    path.write_text(json.dumps(fixture, indent=2, sort_keys=True) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--npm-dir", type=Path, required=True)
    parser.add_argument("--venv", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=FIXTURES)
    parser.add_argument("--only", action="append", default=[])
    args = parser.parse_args(argv)
    failures = 0
    for client in CLIENTS:
        if args.only and client.name not in args.only:
            continue
        try:
            path = capture(client, args.npm_dir.resolve(), args.venv.resolve(), args.out)
        except Exception as exc:  # report every client, then fail
            failures += 1
            print(f"FAILED {client.name}: {exc}", file=sys.stderr)
        else:
            print(f"captured {client.name} -> {path}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
