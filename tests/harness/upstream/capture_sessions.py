"""Capture what real upstream clients return to the model from their tools, as fixtures.

Each client (installed as harnesses/UPSTREAM.md says) runs one scripted session from
`sessions.SCRIPTS` against the scripted model server in a seeded workspace: every model
request of the main conversation is answered with the next step's tool call (the step is the
number of tool results the request already holds, so side requests and retries do not shift
the script), side requests (titles, summaries) get a short text. The tool results of the last
main request are normalised (workspace and home paths, per-run numbers) and written to
`fixtures/sessions/<client>-<version>.json`, which the replay test reads; no client runs in
the test suite.

    python -m tests.harness.upstream.capture_sessions --npm-dir /tmp/oiexec-upstream/npm \\
        --venv /tmp/oiexec-upstream/venv [--only qwen-code]
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
from pathlib import Path
from typing import Any

from tests.harness.upstream.capture import CLIENTS, Client
from tests.harness.upstream.sessions import SCRIPTS, SESSIONS, Step, expand, normalise, seed
from tests.support.model_server import (
    ModelServer,
    RecordedRequest,
    Reply,
    ScriptedModel,
    call,
    custom_call,
    fault,
    reply,
    tool_outputs,
)

PROMPT = "Run the scripted checks."
FINAL = "Done."
_SESSION_TIMEOUT = 300.0
RECAPTURE = (
    "python -m tests.harness.upstream.capture_sessions --npm-dir /tmp/oiexec-upstream/npm "
    "--venv /tmp/oiexec-upstream/venv --only {client}"
)

#: Extra arguments and environment each client needs to run tools unattended.
_UNATTENDED: dict[str, tuple[list[str], dict[str, str]]] = {
    # Root may skip Claude Code's permission prompts only when it says it is sandboxed.
    "claude-code": (["--dangerously-skip-permissions"], {"IS_SANDBOX": "1"}),
    "codex": (["--dangerously-bypass-approvals-and-sandbox"], {}),
}


def _call_id(index: int) -> str:
    return f"call_{index:02d}"


class SessionModel(ScriptedModel):
    """Answers the main conversation from a script, everything else with a short text."""

    def __init__(self, steps: list[Step], ws: Path) -> None:
        super().__init__()
        self.steps = steps
        self.ws = ws
        self.main: list[dict[str, Any]] = []

    def is_main(self, body: Any) -> bool:
        if not isinstance(body, dict) or not body.get("tools"):
            return False
        text = json.dumps(body.get("tools"))
        return all(f'"{step.tool}"' in text for step in self.steps)

    def take(self, request: RecordedRequest) -> Any:
        body = request.body
        if not self.is_main(body):
            return reply("OK.")
        with self._lock:
            self.main.append(body)
        index = len(tool_outputs(body))
        if index < len(self.steps):
            step = self.steps[index]
            args = expand(step.args, self.ws)
            made = (
                custom_call(step.tool, args, call_id=_call_id(index))
                if isinstance(args, str)
                else call(step.tool, args, call_id=_call_id(index))
            )
            answer = reply(tool_calls=[made])
        else:
            answer = reply(FINAL)
        if request.wire == "chat" and not body.get("stream"):
            return fault(200, body=_completion(answer, str(body.get("model"))))
        return answer


def _completion(answer: Reply, model: str) -> dict[str, Any]:
    """`answer` as one non-streamed Chat Completions response (litellm asks for those)."""
    message: dict[str, Any] = {"role": "assistant", "content": answer.text}
    if answer.tool_calls:
        message["tool_calls"] = [
            {
                "id": c.call_id,
                "type": "function",
                "function": {"name": c.name, "arguments": getattr(c, "arguments", "")},
            }
            for c in answer.tool_calls
        ]
    return {
        "id": "chatcmpl-session",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if answer.tool_calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _content_text(content: Any) -> tuple[str, list[str]]:
    """The text of a tool result's content and the kinds of its non-text parts."""
    if isinstance(content, str):
        return content, []
    if isinstance(content, list):
        texts: list[str] = []
        kinds: list[str] = []
        for part in content:
            if not isinstance(part, dict):
                continue
            if isinstance(part.get("text"), str):
                texts.append(part["text"])
            else:
                kinds.append(str(part.get("type")))
        return "".join(texts), kinds
    return ("" if content is None else json.dumps(content)), []


def results_of(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """call id -> {text, is_error, other} for each tool result in a request body."""
    found: dict[str, dict[str, Any]] = {}
    for item in body.get("input") or []:  # responses
        if item.get("type") in ("function_call_output", "custom_tool_call_output"):
            text, other = _content_text(item.get("output"))
            found[item["call_id"]] = {"text": text, "is_error": None, "other": other}
    for message in body.get("messages") or []:
        if message.get("role") == "tool":  # chat
            text, other = _content_text(message.get("content"))
            found[message["tool_call_id"]] = {"text": text, "is_error": None, "other": other}
        content = message.get("content")
        if not isinstance(content, list):
            continue
        blocks = [b for b in content if isinstance(b, dict)]
        for block in blocks:  # messages
            if block.get("type") == "tool_result":
                text, other = _content_text(block.get("content"))
                found[block["tool_use_id"]] = {
                    "text": text,
                    "is_error": bool(block.get("is_error", False)),
                    "other": other,
                }
    return found


def capture_session(client: Client, npm_dir: Path, venv: Path, out_dir: Path) -> Path:
    steps = SCRIPTS[client.name]
    version = client.version(npm_dir, venv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp).resolve()
        home, ws = work / "home", work / "ws"
        home.mkdir()
        ws.mkdir()
        seed(ws)
        model = SessionModel(steps, ws)
        with ModelServer(model) as server:
            argv, env = client.command(npm_dir, venv, server, home, ws, PROMPT)
            extra_args, extra_env = _UNATTENDED.get(client.name, ([], {}))
            argv, env = [*argv, *extra_args], {**env, **extra_env}
            process = subprocess.Popen(
                argv,
                cwd=ws,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                output = process.communicate(timeout=_SESSION_TIMEOUT)[0]
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                output = process.communicate()[0]
            finally:
                if process.poll() is None:
                    os.killpg(process.pid, signal.SIGKILL)
            log = output.decode("utf-8", errors="replace")
        if not model.main:
            raise RuntimeError(f"{client.name} {version} never made a main request\n{log[-3000:]}")
        last = max(model.main, key=lambda b: len(tool_outputs(b)))
        results = results_of(last)
        recorded: list[dict[str, Any]] = []
        for index, step in enumerate(steps):
            got = results.get(_call_id(index))
            if got is None:
                if client.name == "mini-swe-agent" and index == len(steps) - 1:
                    continue  # the submit ends the run: no request carries its result
                raise RuntimeError(
                    f"{client.name}: no result for step {index} ({step.label}); "
                    f"{len(results)} results\n{log[-3000:]}"
                )
            entry: dict[str, Any] = {
                "label": step.label,
                "tool": step.tool,
                "args": step.args,
                "text": normalise(got["text"], ws=ws, home=home),
                "is_error": got["is_error"],
            }
            if got["other"]:
                entry["other_parts"] = got["other"]
            recorded.append(entry)
    fixture = {
        "client": client.name,
        "version": version,
        "harness": client.harness,
        "wire": client.wire,
        "recapture": RECAPTURE.format(client=client.name),
        "steps": recorded,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{client.name}-{version}.json"
    path.write_text(json.dumps(fixture, indent=2, ensure_ascii=False) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--npm-dir", type=Path, required=True)
    parser.add_argument("--venv", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=SESSIONS)
    parser.add_argument("--only", action="append", default=[])
    args = parser.parse_args(argv)
    failures = 0
    for client in CLIENTS:
        if client.name not in SCRIPTS or (args.only and client.name not in args.only):
            continue
        started = time.monotonic()
        try:
            path = capture_session(client, args.npm_dir.resolve(), args.venv.resolve(), args.out)
        except Exception as exc:  # report every client, then fail
            failures += 1
            print(f"FAILED {client.name}: {exc}", file=sys.stderr)
        else:
            took = time.monotonic() - started
            print(f"captured {client.name} -> {path} ({took:.0f} s)", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
