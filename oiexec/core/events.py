"""The public JSONL contract of `interpreter exec --json`.

Every line on stdout in JSON mode is one `ThreadEvent`, tagged by `type`, with the same names
and fields as `codex exec --json` so the Codex SDK and existing tooling read it unchanged.
`oiexec/schemas/events.schema.json` is generated from these models (`python -m
oiexec.core.events`) and a test keeps the committed copy in sync.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    model_serializer,
)

from oiexec.core.errors import FailureClass

SCHEMA_VERSION = "1"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- items -------------------------------------------------------------------------------


class AgentMessageItem(_Model):
    """The assistant's text; the JSON string of the answer under `--output-schema`."""

    id: str
    type: Literal["agent_message"] = "agent_message"
    text: str


class ReasoningItem(_Model):
    """A reasoning summary (parts joined by newlines, empty parts dropped)."""

    id: str
    type: Literal["reasoning"] = "reasoning"
    text: str


CommandStatus = Literal["in_progress", "completed", "failed", "declined"]


class CommandExecutionItem(_Model):
    """A shell command; `exit_code` is null while it runs, non-zero exit means `failed`."""

    id: str
    type: Literal["command_execution"] = "command_execution"
    command: str
    aggregated_output: str = ""
    exit_code: int | None = None
    status: CommandStatus = "in_progress"


class FileUpdateChange(_Model):
    path: str
    kind: Literal["add", "delete", "update"]


class FileChangeItem(_Model):
    """Files changed by a patch or an edit tool; paths are absolute."""

    id: str
    type: Literal["file_change"] = "file_change"
    changes: list[FileUpdateChange]
    status: Literal["in_progress", "completed", "failed"] = "in_progress"


class TodoEntry(_Model):
    text: str
    completed: bool


class TodoListItem(_Model):
    """The plan: started on the first plan update, completed when the turn ends."""

    id: str
    type: Literal["todo_list"] = "todo_list"
    items: list[TodoEntry]


class ErrorItem(_Model):
    """A non-fatal problem (config warning, refused escalation); completed only."""

    id: str
    type: Literal["error"] = "error"
    message: str


class McpToolCallResult(_Model):
    """What an MCP tool returned: its content blocks as the server sent them (text, image,
    resource, ...) and its structured content, if any."""

    content: list[dict[str, Any]]
    structured_content: Any = None


class McpToolCallError(_Model):
    message: str


class McpToolCallItem(_Model):
    """A call to a tool of an MCP server: started when sent, completed with the result or
    failed with the error (refused under approval `never`, timeout, server gone)."""

    id: str
    type: Literal["mcp_tool_call"] = "mcp_tool_call"
    server: str
    tool: str
    arguments: Any = None
    result: McpToolCallResult | None = None
    error: McpToolCallError | None = None
    status: Literal["in_progress", "completed", "failed"] = "in_progress"


class ReviewItem(_Model):
    """The structured result of `exec review` (an oiexec addition; Codex keeps it in the
    rollout only). `review` is the review JSON: findings with their checked locations and the
    overall verdict; the same review also comes rendered as text in an `agent_message`."""

    id: str
    type: Literal["review"] = "review"
    review: dict[str, Any]


ThreadItem = Annotated[
    AgentMessageItem
    | ReasoningItem
    | CommandExecutionItem
    | FileChangeItem
    | TodoListItem
    | ErrorItem
    | McpToolCallItem
    | ReviewItem,
    Field(discriminator="type"),
]


# --- events ------------------------------------------------------------------------------


class Usage(_Model):
    """Token counts, cumulative over the whole thread (resumes included)."""

    input_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_input_tokens: int = 0
    output_tokens: int = 0
    reasoning_output_tokens: int = 0

    def plus(self, other: Usage) -> Usage:
        return Usage(
            **{name: getattr(self, name) + getattr(other, name) for name in Usage.model_fields}
        )


class ModelPrice(_Model):
    """USD per million tokens, as price catalogs quote them. Cached input is billed at its
    own rate when the provider reports it; output includes reasoning tokens."""

    input_per_mtok: float
    output_per_mtok: float
    cached_input_per_mtok: float | None = None
    cache_write_per_mtok: float | None = None

    def cost(self, usage: Usage) -> float:
        cached = usage.cached_input_tokens
        cached_rate = (
            self.input_per_mtok
            if self.cached_input_per_mtok is None
            else (self.cached_input_per_mtok)
        )
        written = usage.cache_write_input_tokens
        write_rate = (
            self.input_per_mtok
            if self.cache_write_per_mtok is None
            else (self.cache_write_per_mtok)
        )
        fresh = max(0, usage.input_tokens - cached - written)
        total = (
            fresh * self.input_per_mtok
            + cached * cached_rate
            + written * write_rate
            + usage.output_tokens * self.output_per_mtok
        )
        return total / 1_000_000


class ThreadError(_Model):
    message: str


class ThreadStarted(_Model):
    """Always the first event; the id can be passed to `exec resume`."""

    type: Literal["thread.started"] = "thread.started"
    thread_id: str


class TurnStarted(_Model):
    """Emitted once the prompt has been accepted and the first model request is made."""

    type: Literal["turn.started"] = "turn.started"


class TurnCompleted(_Model):
    """The last event of a successful run. `cost_usd` (this invocation's cost) and
    `session_cost_usd` (the session's running total, earlier runs of a resumed or forked
    session included) are oiexec's additions beside Codex's `usage`; null when no price is
    known for the model."""

    type: Literal["turn.completed"] = "turn.completed"
    usage: Usage
    cost_usd: float | None = None
    session_cost_usd: float | None = None

    @model_serializer(mode="wrap")
    def _codex_shape(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A run always sets both (null when unknown); a Codex line read back has neither and
        # is written back as it was.
        data: dict[str, Any] = handler(self)
        for name in ("cost_usd", "session_cost_usd"):
            if name not in self.model_fields_set:
                data.pop(name, None)
        return data


class TurnFailed(_Model):
    """The last event of a failed run (provider failure, limit, sandbox, bad answer)."""

    type: Literal["turn.failed"] = "turn.failed"
    error: ThreadError
    #: What kind of failure (docs/exec.md "Failure classes"); an oiexec addition, which
    #: Codex's readers ignore: `batch --retry transient` and the reports decide on it.
    #: Left out when unset, so a Codex line read back is the same line again.
    failure_class: FailureClass | None = Field(default=None, exclude_if=lambda v: v is None)


class ItemStarted(_Model):
    type: Literal["item.started"] = "item.started"
    item: ThreadItem


class ItemUpdated(_Model):
    type: Literal["item.updated"] = "item.updated"
    item: ThreadItem


class ItemCompleted(_Model):
    type: Literal["item.completed"] = "item.completed"
    item: ThreadItem


class StreamError(_Model):
    """A stream-level error; one per retry as `Reconnecting... n/N (<message>)`."""

    type: Literal["error"] = "error"
    message: str


ThreadEvent = Annotated[
    ThreadStarted
    | TurnStarted
    | TurnCompleted
    | TurnFailed
    | ItemStarted
    | ItemUpdated
    | ItemCompleted
    | StreamError,
    Field(discriminator="type"),
]

_EVENT_ADAPTER: TypeAdapter[ThreadEvent] = TypeAdapter(ThreadEvent)


def to_json_line(event: ThreadEvent) -> str:
    """Serialise one event as a compact JSON line (no trailing newline)."""
    return event.model_dump_json()


def parse_event(line: str | bytes) -> ThreadEvent:
    return _EVENT_ADAPTER.validate_json(line)


def check_event(data: object) -> ThreadEvent:
    """`data` (a decoded JSON object) as the event it is; raises pydantic's ValidationError."""
    return _EVENT_ADAPTER.validate_python(data)


def json_schema() -> dict[str, Any]:
    schema = _EVENT_ADAPTER.json_schema()
    schema["title"] = "oiexec JSONL event"
    schema["$id"] = f"https://openinterpreter.com/schemas/oiexec-events-v{SCHEMA_VERSION}.json"
    return schema


def main() -> None:
    print(json.dumps(json_schema(), indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
