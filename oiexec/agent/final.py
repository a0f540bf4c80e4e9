"""What counts as a final answer, and how it is shown.

The default accepts any text and emits it as an `agent_message`. `--output-schema` checks the
answer and asks for one correction; the review command parses a structured review and
renders it. The loop only asks the policy.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from oiexec.core.context import ItemEmitter
from oiexec.core.errors import InvalidAnswer
from oiexec.core.events import AgentMessageItem


@dataclass(frozen=True)
class Retry:
    """Reject the answer; `message` goes back to the model as a user message."""

    message: str
    #: What the event stream says about the rejection, when `message` is too long for a
    #: warning (a check's output is already in its own command item).
    notice: str | None = None
    #: False when the rejection is not the answer's fault and not shown as an `error` item
    #: (a Stop hook sending the model back, which Codex's stream does not show either).
    shown: bool = True


class FinalAnswerPolicy(Protocol):
    def accept(self, text: str, attempt: int) -> str | Retry:
        """The accepted final text, or a Retry. `attempt` counts from 1."""
        ...

    def present(self, text: str, items: ItemEmitter) -> None: ...


class PlainAnswer:
    #: exec's own answers may be wrapped in `--check`; a caller's policy (the review) decides
    #: alone what is final, so the runner only checks policies that say this.
    checkable: ClassVar[bool] = True

    def accept(self, text: str, attempt: int) -> str | Retry:
        return text

    def present(self, text: str, items: ItemEmitter) -> None:
        items.completed(AgentMessageItem(id=items.next_id(), text=text))


class SchemaAnswer(PlainAnswer):
    """`--output-schema`: the answer must be JSON matching the schema; one correction."""

    def __init__(self, schema: dict[str, Any]) -> None:
        import jsonschema

        self._validator = jsonschema.validators.validator_for(schema)(schema)

    def problem(self, text: str) -> str | None:
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            return f"it is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        errors = sorted(self._validator.iter_errors(value), key=lambda e: list(e.path))
        if not errors:
            return None
        where = "/".join(str(p) for p in errors[0].path) or "(root)"
        return f"at {where}: {errors[0].message}"

    def accept(self, text: str, attempt: int) -> str | Retry:
        problem = self.problem(text)
        if problem is None:
            return text
        if attempt == 1:
            return Retry(
                f"Your final answer does not match the required output schema: {problem}. "
                "Reply again with only the corrected JSON value, no other text."
            )
        raise InvalidAnswer(f"the final answer does not match --output-schema: {problem}")
