"""The tool calls of a run: screened as each response arrives, then run one by one through
the gate (hooks), every failure but a limit turned into output the model reads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from oiexec.core.call_screen import screen_response
from oiexec.core.context import ToolContext
from oiexec.core.errors import LimitExceeded, ModelFacingError, ToolInputError
from oiexec.core.protocols import Tool, ToolGate
from oiexec.core.types import ModelRequest, ModelResponse, ToolCall, ToolOutput, ToolSpec

__all__ = ["ToolRunner"]


@dataclass
class ToolRunner:
    tools: Sequence[Tool]
    ctx: ToolContext
    #: Runs around every tool call (pre/post tool hooks); None runs calls as they come.
    gate: ToolGate | None = None
    _by_name: dict[str, Tool] = field(init=False)
    #: Names of the tools the last request offered (a harness may hold some back).
    _offered: tuple[str, ...] = field(default=(), init=False)
    #: Call id -> why the call is not run (too large, not JSON: core/call_screen.py).
    _refused: dict[str, ToolInputError] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self._by_name = {tool.spec.name: tool for tool in self.tools}

    def specs(self) -> tuple[ToolSpec, ...]:
        """What the model may be offered: every tool, one per name."""
        return tuple(tool.spec for tool in self._by_name.values())

    def offered(self, request: ModelRequest) -> None:
        """Notes the tools `request` offers, which an unknown call's error names."""
        self._offered = tuple(spec.name for spec in request.tools)

    def screen(self, response: ModelResponse) -> ModelResponse:
        """Before anything keeps or runs a call: an oversized or unparsable one becomes a
        stub, and is refused when its turn comes."""
        response, refused = screen_response(response)
        self._refused.update(refused)
        return response

    def run(self, call: ToolCall) -> ToolOutput:
        refused = self._refused.pop(call.call_id, None)
        if refused is not None:  # never run, so neither hooks nor the tool see it
            self.ctx.warn(refused.message)
            return _error(call, refused.message)
        if self.gate is None:
            return self._call(call)
        refusal = self.gate.before(call)
        if refusal is not None:
            return _error(call, refusal)
        return self.gate.after(call, self._call(call))

    def _call(self, call: ToolCall) -> ToolOutput:
        tool = self._by_name.get(call.name)
        if tool is None:
            # What the model was offered, not every tool there is: naming tools deferred
            # behind a search would undo the deferral.
            known = ", ".join(sorted(self._offered or self._by_name))
            return _error(
                call,
                f"unsupported call: there is no tool named `{call.name}`. "
                f"Available tools: {known}.",
            )
        try:
            return tool.run(call, self.ctx)
        except LimitExceeded:
            raise  # a limit reached inside a tool ends the run (interrupts are BaseException)
        except ModelFacingError as exc:
            return _error(call, exc.message)
        except Exception as exc:
            # A bug in one tool should cost the model one call, not the whole run.
            self.ctx.warn(f"tool `{call.name}` failed: {type(exc).__name__}: {exc}")
            return _error(
                call, f"internal error in tool `{call.name}`: {type(exc).__name__}: {exc}"
            )


def _error(call: ToolCall, text: str) -> ToolOutput:
    return ToolOutput(call_id=call.call_id, call_type=call.call_type, output=text, is_error=True)
