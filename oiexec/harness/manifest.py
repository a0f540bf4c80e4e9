"""`ManifestHarness`: a harness built from its `harness.toml`.

Every harness, `native` included, is one. It supplies the prompt, the tools (registered
implementations under the schemas of the harness's `tools.json`), the first context
messages, and answers every question of the loop's `Harness` protocol: request shaping per
`[history]`, text-action parsing per `action_format`, format-error corrections and
completion per `[completion]`.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from oiexec.core.context import ToolContext
from oiexec.core.errors import FailureClass, OiexecError
from oiexec.core.policy import SandboxPolicy
from oiexec.core.protocols import HarnessStep, Observation, Tool
from oiexec.core.types import (
    HistoryItem,
    Message,
    ModelRequest,
    ModelResponse,
    SamplingOptions,
    ThinkingOptions,
    ToolCall,
    ToolOutput,
)
from oiexec.extensions.skills import Skill
from oiexec.harness import actions
from oiexec.harness.compaction import compaction_prompts
from oiexec.harness.context import fill
from oiexec.harness.data import load_tool_schemas, read_harness_file
from oiexec.harness.history_rules import assistant_side, shape_calls, shape_reasoning
from oiexec.harness.instructions import Instructions, place_developer_text
from oiexec.harness.spec import HarnessSpec
from oiexec.harness.styles import style_for
from oiexec.harness.styles.swe import swe_observation
from oiexec.tools.framework import ManifestTool, Runtime
from oiexec.tools.style import Style

if TYPE_CHECKING:
    from oiexec.harness.mcp_tools import McpOffer

__all__ = ["FormatErrorLimit", "HarnessSetup", "ManifestHarness"]

_DEFAULT_FORMAT_ERROR = (
    "Format error: your reply must contain exactly one action, found $count. Reply again "
    "with a short explanation and exactly one action."
)


#: `model_reasoning_effort` onto Anthropic's `output_config.effort` scale.
_ANTHROPIC_EFFORT: dict[str, str] = {
    "none": "low",
    "minimal": "low",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "xhigh",
    "max": "max",
    "ultra": "max",
    "persistent": "max",
}


class FormatErrorLimit(OiexecError):
    """The model broke the action format more times in a row than the harness allows."""

    failure_class: ClassVar[FailureClass] = "task"  # the model's own failure, not the runner's


@dataclass(frozen=True)
class HarnessSetup:
    """What a harness instance needs besides its manifest."""

    #: What prompt templates are filled with (read only when a template uses them).
    variables: Mapping[str, str]
    guidance: bool = True
    user_instructions: str | None = None
    environment_context: str | None = None
    output_token_limit: int = 10_000
    model: str = ""
    #: Tools from outside the harness (the run's MCP servers), offered as the product would.
    extra_tools: tuple[Tool, ...] = ()
    #: The skills the model may use, listed in the initial context as the product does.
    skills: tuple[Skill, ...] = ()
    #: The provider's wire (`responses`, `chat`, `messages`): hosted tools exist on one.
    wire: str = ""
    #: `web_search` as configured (harness/web_search.py); None when unset.
    web_search: str | None = None
    #: Codex's `features.tool_search_always_defer_mcp_tools`: defer MCP tools however few.
    always_defer_mcp_tools: bool = False
    #: Reports what the run should know (MCP tools this harness cannot offer).
    warn: Callable[[str], None] | None = None
    #: Keeps the file tools' read-before-write state in the session, and what a resumed
    #: session kept of it (`Runtime.file_journal`, `Runtime.restored_files`).
    file_journal: Callable[[dict[str, Any]], None] | None = None
    restored_files: Sequence[Mapping[str, Any]] = ()
    #: The user's base and developer instructions (harness/instructions.py).
    instructions: Instructions = field(default_factory=Instructions)


@dataclass
class _State:
    format_errors: int = 0
    #: Texts of the messages this harness added (corrections, observations), not the user's.
    produced: set[str] = field(default_factory=set)
    corrections: set[str] = field(default_factory=set)
    synthetic: set[str] = field(default_factory=set)
    context_texts: set[str] = field(default_factory=set)


class ManifestHarness:
    """Any harness described by a manifest."""

    def __init__(self, spec: HarnessSpec, setup: HarnessSetup) -> None:
        self.spec = spec
        self.setup = setup
        self.id = spec.id
        self.runtime = Runtime(
            style=style_for(spec.style),
            env=dict(spec.env),
            output_token_limit=setup.output_token_limit,
            file_journal=setup.file_journal,
            restored_files=setup.restored_files,
        )
        self._state = _State()
        self._mcp_offer: McpOffer | None = None
        self._tools = self._build_tools()
        self._by_name = {tool.spec.name: tool for tool in self._tools}
        self._prompt = self._render_prompt()

    # --- construction --------------------------------------------------------------------

    def _build_tools(self) -> list[Tool]:
        schemas = load_tool_schemas(self.id)
        own: list[Tool] = [
            ManifestTool(e, schemas[e.name], self.runtime, _entry_style(e.render))
            for e in self.spec.tools
        ]
        if not self.setup.extra_tools:
            return own
        from oiexec.harness.mcp_tools import offer_mcp_tools, unavailable_warning

        warning = unavailable_warning(self.spec, self.setup.extra_tools)
        if warning is not None and self.setup.warn is not None:
            self.setup.warn(warning)
        mcp, self._mcp_offer = offer_mcp_tools(
            self.spec, self.setup.extra_tools, always_defer=self.setup.always_defer_mcp_tools
        )
        return own + mcp

    def _render_prompt(self) -> str:
        base = self.setup.instructions.base
        if base is not None:
            # The user's own text, verbatim: a `$` in it is not a template variable.
            body = base
        else:
            body = fill(read_harness_file(self.id, self.spec.prompt.system), self.setup.variables)
        if self.setup.guidance and self.spec.guidance:
            guidance = read_harness_file(self.id, self.spec.guidance).strip()
            body = f"{guidance}\n\n{body}"
        return body.strip() + "\n"

    # --- Harness ------------------------------------------------------------------------

    def instructions(self) -> str:
        return self._prompt

    def tools(self) -> Sequence[Tool]:
        return self._tools

    def initial_context(self, cwd: Path, policy: SandboxPolicy) -> list[HistoryItem]:
        items: list[HistoryItem] = []
        prompt = self.spec.prompt
        if self.setup.skills:
            # First, as Codex sends its skills block right after the base instructions.
            from oiexec.harness.skills import skills_context

            items.extend(skills_context(self.spec, self.setup.skills))
        if prompt.codex_context:
            if self.setup.user_instructions:
                items.append(Message(role="user", text=self.setup.user_instructions))
            if self.setup.environment_context:
                items.append(Message(role="user", text=self.setup.environment_context))
        if prompt.setup_exchange:
            text = fill(read_harness_file(self.id, prompt.setup_exchange), self.setup.variables)
            items.append(Message(role="user", text=text.strip()))
            items.append(Message(role="assistant", text=prompt.setup_reply))
        self._state.context_texts.update(i.text for i in items if isinstance(i, Message))
        return items

    def environment_context(self, cwd: Path, policy: SandboxPolicy) -> HistoryItem | None:
        """Only harnesses that open with the Codex environment context describe the sandbox;
        the others' prompts never told the model, so there is nothing to correct."""
        if not (self.spec.prompt.codex_context and self.setup.environment_context):
            return None
        from oiexec.harness.agents_md import policy_environment_context

        item = Message(role="user", text=policy_environment_context(cwd, policy))
        self._state.context_texts.add(item.text)
        return item

    def finish_turn(self, ctx: ToolContext) -> None:
        self.runtime.finish(ctx)

    def compaction_prompts(self) -> tuple[str, str]:
        return compaction_prompts(self.id)

    def close(self) -> None:
        self.runtime.close()

    # --- Harness: requests ---------------------------------------------------------------

    def prepare_request(self, request: ModelRequest) -> ModelRequest:
        history = list(request.history)
        history = self._wrap_task(history)
        history = self._prune_corrections(history)
        history = shape_calls(history, self.spec.history)
        history = shape_reasoning(history, self.spec.history)
        if self.spec.prompt.turn_meta:
            history = self._turn_meta(history)
        update: dict[str, object] = {"history": tuple(history), **self._sampling(request)}
        if self._mcp_offer is not None:
            update["tools"] = self._mcp_offer.offered(request.tools, history)
        if self.spec.hosted_web_search and self.setup.web_search:
            from oiexec.harness.web_search import hosted_tools

            update["hosted_tools"] = hosted_tools(self.setup.wire, self.setup.web_search)
        if not self.spec.advertise_tools:
            update["tools"] = ()
        if self.spec.completion.single_action:
            update["parallel_tool_calls"] = False
        # Last, on the instructions the loop chose (the harness's, or the review rubric).
        return place_developer_text(
            request.model_copy(update=update),
            self.setup.instructions.developer,
            self.spec.prompt.developer_text,
        )

    def _sampling(self, request: ModelRequest) -> dict[str, object]:
        """`[request]` as request fields. A `model_reasoning_effort` the user set wins over
        the manifest's defaults (effort, thinking switched off)."""
        spec = self.spec.request.for_model(request.model)
        user_effort = request.reasoning_effort
        effort = user_effort or spec.reasoning_effort
        if effort:
            effort = spec.reasoning_effort_map.get(effort, effort)
        thinking: ThinkingOptions | None = None
        if spec.thinking is not None:
            thinking = ThinkingOptions(
                enabled=spec.thinking.type == "enabled",
                budget_tokens=spec.thinking.budget_tokens,
                keep=spec.thinking.keep,
            )
            if user_effort == "none":
                thinking = ThinkingOptions(enabled=False)
            elif user_effort and not thinking.enabled:
                thinking = None  # the wire derives thinking from the user's effort
        output_effort = spec.effort
        if output_effort is not None and user_effort:
            output_effort = _ANTHROPIC_EFFORT.get(user_effort, output_effort)
        limit = spec.max_completion_tokens or spec.max_tokens
        sampling = SamplingOptions(
            max_output_tokens=limit,
            max_tokens_field=(
                "max_completion_tokens" if spec.max_completion_tokens else "max_tokens"
            ),
            temperature=spec.temperature,
            top_p=spec.top_p,
            thinking=thinking,
            effort=output_effort,
            include_usage=spec.include_usage,
            chat_prompt_cache_key=spec.prompt_cache_key is not None,
            extra_body=dict(spec.extra_body),
        )
        update: dict[str, object] = {"sampling": sampling, "reasoning_effort": effort}
        if spec.prompt_cache_key is not None and request.prompt_cache_key:
            key = fill(spec.prompt_cache_key, {"id": request.prompt_cache_key})
            update["prompt_cache_key"] = key
        return update

    def _is_user_text(self, item: HistoryItem) -> bool:
        return (
            isinstance(item, Message)
            and item.role == "user"
            and item.text not in self._state.produced
            and item.text not in self._state.context_texts
        )

    def _wrap_task(self, history: list[HistoryItem]) -> list[HistoryItem]:
        prompt = self.spec.prompt
        if not prompt.task_template and not prompt.user_reminder:
            return history
        template = read_harness_file(self.id, prompt.task_template) if prompt.task_template else ""
        out: list[HistoryItem] = []
        wrapped = False
        for item in history:
            if not self._is_user_text(item):
                out.append(item)
                continue
            assert isinstance(item, Message)
            if template and not wrapped:
                text = fill(template, {**self.setup.variables, "task": item.text}).strip()
                out.append(item.model_copy(update={"text": text}))
                wrapped = True
            else:
                out.append(item)
            if prompt.user_reminder:
                out.append(Message(role="user", text=prompt.user_reminder))
        return out

    def _turn_meta(self, history: list[HistoryItem]) -> list[HistoryItem]:
        for index in range(len(history) - 1, -1, -1):
            item = history[index]
            if isinstance(item, Message) and item.role == "user":
                v = self.setup.variables
                meta = f"<turn_meta>\ndate: {v['date']}\nworkspace: {v['cwd']}\n</turn_meta>\n\n"
                history[index] = item.model_copy(update={"text": meta + item.text})
                break
        return history

    def _prune_corrections(self, history: list[HistoryItem]) -> list[HistoryItem]:
        """SWE-agent drops a format correction (and the reply it corrected) once a later
        reply was well formed."""
        if not self.spec.history.prune_format_errors or not self._state.corrections:
            return history
        keep = [True] * len(history)
        last_correction = max(
            (
                i
                for i, it in enumerate(history)
                if isinstance(it, Message) and it.text in self._state.corrections
            ),
            default=-1,
        )
        for index, item in enumerate(history):
            if not (isinstance(item, Message) and item.text in self._state.corrections):
                continue
            if index == last_correction and self._state.format_errors:
                continue  # not recovered yet
            keep[index] = False
            back = index - 1
            while back >= 0 and assistant_side(history[back]):
                keep[back] = False
                back -= 1
        return [item for item, kept in zip(history, keep, strict=True) if kept]

    # --- Harness: responses --------------------------------------------------------------

    def interpret(self, response: ModelResponse) -> HarnessStep:
        fmt = self.spec.action_format
        completion = self.spec.completion
        text = response.final_text or ""
        calls = list(response.tool_calls)
        if fmt == "fenced_block":
            blocks = actions.fenced_blocks(text, self.spec.fence_language)
            if len(blocks) != 1:
                return self._format_error(len(blocks), response)
            calls = [self._synthetic("bash", {"command": blocks[0].strip("\n")})]
        elif fmt == "discussion_command":
            parsed, problem = actions.swe_action(text, self._positional())
            if problem is not None or len(parsed) != 1:
                return self._format_error(len(parsed), response)
            calls = [self._synthetic(parsed[0].tool, parsed[0].arguments)]
        elif fmt == "markdown_code" and not calls:
            code_blocks = actions.code_blocks(text)
            if code_blocks:
                language, code = code_blocks[0]
                calls = [self._synthetic("execute", {"language": language, "code": code})]
        if not calls:
            if completion.require_action:
                return self._format_error(0, response)
            return HarnessStep(final=True)
        if completion.single_action and len(calls) > 1:
            return self._format_error(len(calls), response)
        self._state.format_errors = 0
        return HarnessStep(calls=tuple(calls))

    def _positional(self) -> dict[str, list[str]]:
        # Only text-action harnesses get here: function-calling runs never load the models.
        from oiexec.tools.options import EditorOptions

        names: dict[str, list[str]] = {}
        for entry in self.spec.tools:
            options = entry.tool_options()
            names[entry.name] = options.positional if isinstance(options, EditorOptions) else []
        return names

    def _synthetic(self, name: str, arguments: dict[str, object]) -> ToolCall:
        call_id = f"text_{secrets.token_hex(6)}"
        self._state.synthetic.add(call_id)
        return ToolCall(call_id=call_id, name=name, arguments=json.dumps(arguments))

    def _format_error(self, count: int, response: ModelResponse) -> HarnessStep:
        completion = self.spec.completion
        self._state.format_errors += 1
        if self._state.format_errors > completion.max_format_retries:
            raise FormatErrorLimit(
                f"harness `{self.id}`: the model broke the action format "
                f"{self._state.format_errors} times in a row (exit_format)"
            )
        if response.finish_reason == "length":
            message = (
                "Your reply was cut off because it was too long. Reply again, more concisely, "
                "with exactly one action."
            )
        else:
            template = completion.format_error or _DEFAULT_FORMAT_ERROR
            message = fill(template, {"count": str(count)}).strip()
        self._state.produced.add(message)
        self._state.corrections.add(message)
        return HarnessStep(feedback=(Message(role="user", text=message),))

    def observe(self, call: ToolCall, output: ToolOutput) -> Observation:
        submission = self.runtime.submissions.pop(call.call_id, None)
        synthetic = call.call_id in self._state.synthetic
        if self.spec.history.tool_result_role == "tool" and not synthetic:
            items: tuple[HistoryItem, ...] = (output,)
        else:
            text = self._observation_text(output.output)
            self._state.produced.add(text)
            items = (Message(role="user", text=text),)
        if submission is not None:
            return Observation(items, submission.strip("\n") or "Submitted with no changes.")
        return Observation(items)

    def _observation_text(self, output: str) -> str:
        template = self.spec.history.observation_template
        if template == "swe":
            return swe_observation(output)
        return fill(template, {"output": output})


def _entry_style(render: str) -> Style:
    """A tool entry's `render`, validated when the manifest loaded: `default` (an entry that
    names none) is the plain wording."""
    return Style() if render == "default" else style_for(render)
