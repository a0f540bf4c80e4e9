"""The readable transcript on stderr (header, commands, patches, messages, tokens and cost) and
only the final message on stdout: the event processor of a run without `--json`.

Colour only when asked (a TTY or `--color always`). Inside GitHub Actions each model turn is
folded into a `::group::`, inside GitLab CI into a collapsed section (output/ci), so long runs
stay readable in the job log.

While a model request has no answer, a heartbeat line (`waiting for the model… 15s`) appears
every 15 s (output/heartbeat.py). In GitHub Actions the lines land inside the step's group,
so they fold with it: one line per interval in a collapsed group, no group of their own
(GitLab's sections alike).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Literal, TextIO, assert_never

import click

from oiexec.core.context import ItemEmitter
from oiexec.core.costs import Spend
from oiexec.core.events import (
    AgentMessageItem,
    CommandExecutionItem,
    ErrorItem,
    FileChangeItem,
    ItemCompleted,
    ItemStarted,
    ItemUpdated,
    McpToolCallItem,
    ReasoningItem,
    ReviewItem,
    StreamError,
    ThreadEvent,
    ThreadStarted,
    TodoListItem,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
)
from oiexec.core.redact import redact
from oiexec.output.ci import turn_folds
from oiexec.output.heartbeat import Heartbeat, interval_from_env

_OUTPUT_TAIL_LINES = 12
#: How much of an MCP call's arguments the transcript shows.
_MCP_ARGS_CHARS = 120


def use_color(choice: Literal["always", "never", "auto"], stream: TextIO) -> bool:
    if choice == "always":
        return True
    if choice == "never":
        return False
    return stream.isatty()


class HumanProcessor:
    def __init__(
        self,
        stream: TextIO,
        answer: TextIO,
        *,
        color: bool,
        show_reasoning: bool = True,
        heartbeat_interval: float | None = None,
    ) -> None:
        self._stream = stream
        self._answer = answer
        self._color = color
        self._show_reasoning = show_reasoning
        self._folds = turn_folds()
        # The heartbeat writes from its own thread, between the loop's lines.
        self._lock = threading.Lock()
        interval = interval_from_env() if heartbeat_interval is None else heartbeat_interval
        self._heartbeat = Heartbeat(lambda text: self._write(self._style(text, dim=True)), interval)

    # -- plumbing -----------------------------------------------------------------------

    def _write(self, text: str) -> None:
        with self._lock:
            self._stream.write(redact(text) + "\n")
            self._stream.flush()

    # -- waiting on the model (a `WaitObserver` for the provider) -----------------------

    def waiting(self) -> None:
        self._heartbeat.waiting()

    def answered(self) -> None:
        self._heartbeat.answered()

    def _style(self, text: str, **styles: object) -> str:
        return click.style(text, **styles) if self._color else text  # type: ignore[arg-type]

    def header(self, title: str, fields: Sequence[tuple[str, str]]) -> None:
        self._write(title)
        self._write("--------")
        for name, value in fields:
            self._write(f"{self._style(name + ':', bold=True)} {value}")
        self._write("--------")

    def warning(self, text: str) -> None:
        self._write(self._style("warning: ", fg="yellow", bold=True) + text)

    def startup_warning(self, text: str, items: ItemEmitter) -> None:
        # Only the warning line: an `error` item would be shown a second time.
        self.warning(text)

    def final_output(self, message: str) -> None:
        # stdout carries the answer alone, so `$(interpreter exec ...)` captures just that.
        self._answer.write(redact(message) + "\n")
        self._answer.flush()

    def spent(self, spend: Spend) -> None:
        label, _, rest = spend.line().partition(": ")
        self._write(self._style(f"{label}: ", bold=True) + rest)

    def step(self, number: int) -> None:
        if self._folds is not None:
            for line in self._folds.start(number):
                self._write(line)

    def _end_group(self) -> None:
        if self._folds is not None:
            for line in self._folds.end():
                self._write(line)

    # -- events ---------------------------------------------------------------------------

    def emit(self, event: ThreadEvent) -> None:
        match event:
            case ThreadStarted() | TurnStarted():
                pass
            case ItemStarted(item=item):
                if isinstance(item, CommandExecutionItem):
                    self._write(self._style("exec ", fg="magenta", bold=True) + item.command)
                elif isinstance(item, McpToolCallItem):
                    self._write(self._style("tool ", fg="magenta", bold=True) + _mcp_call(item))
                elif isinstance(item, TodoListItem):
                    self._todo(item)
            case ItemUpdated(item=item):
                if isinstance(item, TodoListItem):
                    self._todo(item)
            case ItemCompleted(item=item):
                self._completed(item)
            case StreamError(message=message):
                self._write(self._style("error: ", fg="red", bold=True) + message)
            case TurnCompleted():
                self._end_group()  # what it spent comes last, whatever the outcome (`spent`)
            case TurnFailed(error=error):
                self._end_group()
                self._write(self._style("ERROR: ", fg="red", bold=True) + error.message)
            case _:
                assert_never(event)

    def _completed(self, item: object) -> None:
        match item:
            case CommandExecutionItem():
                ok = item.status == "completed"
                verdict = "succeeded" if ok else f"{item.status} (exit {item.exit_code})"
                if item.status == "declined":  # never started, so its command was not shown
                    self._write(self._style("exec ", fg="magenta", bold=True) + item.command)
                    verdict = "declined (not run)"
                self._write(self._style(verdict, fg="green" if ok else "red"))
                lines = item.aggregated_output.rstrip("\n").splitlines()
                if len(lines) > _OUTPUT_TAIL_LINES:
                    hidden = len(lines) - _OUTPUT_TAIL_LINES
                    self._write(self._style(f"  … {hidden} lines hidden", dim=True))
                for line in lines[-_OUTPUT_TAIL_LINES:]:
                    self._write(self._style("  " + line, dim=True))
            case FileChangeItem():
                verdict = "applied" if item.status == "completed" else "failed"
                self._write(self._style(f"patch {verdict}", fg="cyan", bold=True))
                marks = {"add": "A", "delete": "D", "update": "M"}
                for change in item.changes:
                    self._write(f"  {marks[change.kind]} {change.path}")
            case AgentMessageItem():
                self._write(self._style("assistant", fg="blue", bold=True))
                self._write(item.text)
            case ReasoningItem():
                if self._show_reasoning:
                    self._write(self._style("thinking", italic=True))
                    self._write(self._style(item.text, dim=True))
            case TodoListItem():
                pass  # shown when started and on each update; completion changes nothing
            case McpToolCallItem():
                ok = item.status == "completed"
                detail = f": {item.error.message}" if item.error is not None else ""
                verdict = "succeeded" if ok else f"failed{detail}"
                self._write(
                    self._style(f"{_mcp_call(item)} {verdict}", fg="green" if ok else "red")
                )
            case ErrorItem():
                self.warning(item.message)
            case ReviewItem():
                # The text of the review came as an agent_message; only sum it up here.
                findings = item.review.get("findings") or []
                verdict = item.review.get("overall_correctness") or "no verdict"
                self._write(
                    self._style(f"review: {len(findings)} finding(s), {verdict}", bold=True)
                )

    def _todo(self, item: TodoListItem) -> None:
        self._write(self._style("plan", bold=True))
        for entry in item.items:
            self._write(f"  [{'x' if entry.completed else ' '}] {entry.text}")

    def close(self) -> None:
        self._heartbeat.close()
        self._end_group()


def _mcp_call(item: McpToolCallItem) -> str:
    """`server.tool(arguments)` with the arguments as compact JSON, cut to one short line."""
    arguments = "" if item.arguments is None else json.dumps(item.arguments, ensure_ascii=False)
    arguments = redact(arguments)  # before the cut, which could leave part of a secret
    if len(arguments) > _MCP_ARGS_CHARS:
        arguments = arguments[: _MCP_ARGS_CHARS - 1] + "…"
    return f"{item.server}.{item.tool}({arguments})"
