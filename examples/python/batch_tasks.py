"""Run a batch of agent tasks concurrently with asyncio and write a summary.

    python examples/python/batch_tasks.py tasks.jsonl --out summary.json --jobs 4

`tasks.jsonl` holds one task a line: `{"id": "fix-calc", "prompt": "fix the failing test",
"cwd": "/path/to/repo"}`, optionally with `"check"` (a command that must pass, e.g.
`"pytest -q"`), `"max_turns"` and `"timeout"` (seconds). The provider, model and keys come
from your oiexec config (`~/.openinterpreter/config.toml`) and environment, exactly as for
`interpreter exec`; `--model` and `--sandbox` apply to every task.

The summary is a JSON list, one entry per task: id, exit code, ok, why it failed, the final
response, the thread id (for `interpreter exec resume ID`), tokens used and the files the
turn changed. A table goes to stdout. Exit status: 0 when every task succeeded, else 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

from oiexec import Agent, OiexecError, Turn


async def run_task(task: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    agent = Agent(model=args.model, sandbox=args.sandbox, cwd=task.get("cwd"))
    thread = agent.start_thread()
    try:
        turn: Turn = await thread.arun(
            task["prompt"],
            check=task.get("check"),
            max_turns=task.get("max_turns"),
            timeout=task.get("timeout"),
        )
    except OiexecError as exc:  # the task could not start: bad config, cwd, ...
        return {"id": task["id"], "exit_code": exc.exit_code, "ok": False, "reason": exc.message}
    return {
        "id": task["id"],
        "exit_code": int(turn.exit_code),
        "ok": turn.ok,
        "reason": turn.reason,
        "final_response": turn.final_response,
        "thread_id": turn.thread_id,
        "tokens": turn.usage.input_tokens + turn.usage.output_tokens,
        "changed_files": re.findall(r"^\+\+\+ b/(.+)$", turn.diff or "", flags=re.MULTILINE),
    }


async def run_all(tasks: list[dict[str, Any]], args: argparse.Namespace) -> list[dict[str, Any]]:
    slots = asyncio.Semaphore(args.jobs)

    async def limited(task: dict[str, Any]) -> dict[str, Any]:
        async with slots:
            return await run_task(task, args)

    return await asyncio.gather(*(limited(task) for task in tasks))


def positive(text: str) -> int:
    # --jobs 0 would leave every task waiting for a slot forever.
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return int(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", type=Path, help="JSONL file, one task a line")
    parser.add_argument("--out", type=Path, required=True, help="where to write summary.json")
    parser.add_argument("--jobs", type=positive, default=4, help="tasks running at once")
    parser.add_argument("--model")
    parser.add_argument("--sandbox", default="workspace-write")
    args = parser.parse_args()

    lines = args.tasks.read_text(encoding="utf-8").splitlines()
    tasks = [json.loads(line) for line in lines if line.strip()]
    summary = asyncio.run(run_all(tasks, args))

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    for entry in summary:
        status = "ok" if entry["ok"] else f"exit {entry['exit_code']}: {entry['reason']}"
        print(f"{entry['id']:<24} {status}")
    return 0 if all(entry["ok"] for entry in summary) else 1


if __name__ == "__main__":
    sys.exit(main())
