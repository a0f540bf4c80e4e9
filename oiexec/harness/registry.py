"""Which harness a run gets, and building it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from oiexec.config.settings import ProviderConfig, Settings
from oiexec.errors import ConfigError
from oiexec.protocols import Harness
from oiexec.sandbox.base import SandboxPolicy


@dataclass(frozen=True)
class HarnessInputs:
    """What every harness may use to build its prompt and tools."""

    settings: Settings
    provider_id: str
    provider: ProviderConfig
    cwd: Path
    home: Path
    policy: SandboxPolicy


def select_harness_id(inputs: HarnessInputs) -> str:
    return inputs.settings.harness or "native"


def build_harness(inputs: HarnessInputs) -> Harness:
    from oiexec.harness.agents_md import discover_user_instructions, environment_context
    from oiexec.harness.native import NativeHarness

    harness_id = select_harness_id(inputs)
    if harness_id != "native":
        raise ConfigError(
            f"unknown harness `{harness_id}`",
            hint="Available harnesses: native.",
        )
    settings = inputs.settings
    policy = inputs.policy
    return NativeHarness(
        user_instructions=discover_user_instructions(
            inputs.cwd,
            home=inputs.home,
            max_bytes=settings.project_doc_max_bytes,
            fallback_filenames=settings.project_doc_fallback_filenames,
        ),
        environment_context=environment_context(
            cwd=inputs.cwd,
            shell=os.environ.get("SHELL", "/bin/bash"),
            sandbox_mode=policy.mode,
            network_access=not policy.network_disabled,
            writable_roots=[str(root) for root in policy.writable_roots()],
        ),
        output_token_limit=settings.tool_output_token_limit,
    )
