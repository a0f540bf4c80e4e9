"""Which harness a run gets, and building it: `build_harness(HarnessInputs) -> Harness` is
what the runner calls."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oiexec.config.settings import ProviderConfig, Settings
from oiexec.core.policy import SandboxPolicy
from oiexec.core.protocols import Harness, Tool
from oiexec.extensions.skills import Skill
from oiexec.harness.instructions import Instructions

__all__ = ["HarnessInputs", "build_harness", "select_harness_id"]


@dataclass(frozen=True)
class HarnessInputs:
    """What every harness may use to build its prompt and tools."""

    settings: Settings
    provider_id: str
    provider: ProviderConfig
    cwd: Path
    home: Path
    policy: SandboxPolicy
    #: The run's MCP tools (oiexec.mcp), offered in the harness's own format.
    extra_tools: tuple[Tool, ...] = ()
    #: Skills found for this run (oiexec.extensions.skills).
    skills: tuple[Skill, ...] = ()
    #: Run warnings from building the harness (MCP tools a text harness cannot offer).
    warn: Callable[[str], None] | None = None
    #: The file tools' read-before-write state: where its changes are kept (the rollout) and
    #: what a resumed session kept of it.
    file_journal: Callable[[dict[str, Any]], None] | None = None
    restored_files: Sequence[Mapping[str, Any]] = ()
    #: The harness the run chose from `settings` (runner/prepare, once per run); None: it is
    #: chosen here.
    harness_id: str | None = None
    #: The user's base and developer instructions (runner/instructions.py reads them).
    instructions: Instructions = field(default_factory=Instructions)


def select_harness_id(inputs: HarnessInputs) -> str:
    """The harness to build: the run's choice, else the one `settings` choose."""
    from oiexec.harness.select import choose_harness_id

    if inputs.harness_id is not None:
        return inputs.harness_id
    return choose_harness_id(
        inputs.settings.harness, inputs.settings.model, inputs.provider_id, inputs.provider
    )


def build_harness(inputs: HarnessInputs) -> Harness:
    from oiexec.harness.agents_md import discover_user_instructions, policy_environment_context
    from oiexec.harness.data import load_spec
    from oiexec.harness.manifest import HarnessSetup, ManifestHarness
    from oiexec.harness.web_search import web_search_mode

    harness_id = select_harness_id(inputs)
    settings = inputs.settings
    policy = inputs.policy
    user_instructions = discover_user_instructions(
        inputs.cwd,
        home=inputs.home,
        max_bytes=settings.project_doc_max_bytes,
        fallback_filenames=settings.project_doc_fallback_filenames,
        deny=policy.deny_paths,
    )
    env_context = policy_environment_context(inputs.cwd, policy)
    setup = HarnessSetup(
        variables=_PromptVariables(inputs),
        guidance=settings.harness_guidance,
        user_instructions=user_instructions,
        environment_context=env_context,
        output_token_limit=settings.tool_output_token_limit,
        model=settings.model,
        extra_tools=inputs.extra_tools,
        skills=inputs.skills,
        wire=inputs.provider.wire_api,
        web_search=web_search_mode(settings),
        always_defer_mcp_tools=settings.features.get("tool_search_always_defer_mcp_tools") is True,
        warn=inputs.warn,
        file_journal=inputs.file_journal,
        restored_files=inputs.restored_files,
        instructions=inputs.instructions,
    )
    return ManifestHarness(load_spec(harness_id), setup)


class _PromptVariables(Mapping[str, str]):
    """The prompt variables, computed when a template first reads one: they cost git calls, a
    directory walk and the file tools' import, which a prompt without variables (native's)
    must not pay at start-up."""

    def __init__(self, inputs: HarnessInputs) -> None:
        self._inputs = inputs
        self._values: dict[str, str] | None = None

    def _load(self) -> dict[str, str]:
        if self._values is None:
            from oiexec.harness.agents_md import read_project_docs
            from oiexec.harness.context import prompt_variables

            inputs, settings = self._inputs, self._inputs.settings
            agents_md = read_project_docs(
                inputs.cwd,
                max_bytes=settings.project_doc_max_bytes,
                fallback_filenames=settings.project_doc_fallback_filenames,
                deny=inputs.policy.deny_paths,
            )
            self._values = prompt_variables(inputs.cwd, shell="/bin/bash", agents_md=agents_md)
        return self._values

    def __getitem__(self, key: str) -> str:
        return self._load()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())
