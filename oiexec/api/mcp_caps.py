"""What `interpreter mcp-server`'s operator lets its callers choose.

The server's flags are the defaults of every run. Two of them are also caps: `-C` is the tree
a call's cwd must stay inside, and `-s` is the loosest sandbox a call may ask for. Under `-s`
a caller also may not pick anything that could undo the sandbox from outside it: config keys
other than `CALLER_CONFIG_KEYS`, the hook switches among `features`, a profile other than the
server's own, or a thread the server did not start (each is explained where it is refused).
Without `-s` the operator lets callers choose everything, as Codex's `mcp-server` does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from oiexec.core.policy import SANDBOX_MODES, SandboxMode

__all__ = [
    "CALLER_CONFIG_KEYS",
    "OPERATOR_FEATURES",
    "ServerDefaults",
    "check_config",
    "check_thread",
    "choose_cwd",
    "choose_profile",
    "choose_sandbox",
    "server_defaults",
]


@dataclass(frozen=True)
class ServerDefaults:
    """What `interpreter mcp-server`'s own flags set for every run."""

    model: str | None = None
    #: The default sandbox and the loosest one a caller may ask for.
    sandbox: SandboxMode | None = None
    profile: str | None = None
    harness: str | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    #: The default working directory and the tree a call's `cwd` must be inside.
    root: Path | None = None


def server_defaults(
    *,
    model: str | None,
    sandbox: SandboxMode | None,
    root: str | None,
    profile: str | None,
    harness: str | None,
    overrides: tuple[str, ...],
) -> ServerDefaults:
    """The defaults `interpreter mcp-server`'s flags give, checked now: a malformed `-c` is a
    UsageError (exit 2), and a bad value, an unknown profile or a broken user config a
    ConfigError (exit 3) at start rather than a failure of every call."""
    from oiexec.config.layers import deep_merge
    from oiexec.config.loader import ConfigInputs, load_config
    from oiexec.config.overrides import nest, parse_override

    config: dict[str, Any] = {}
    for text in overrides:
        path, value = parse_override(text)
        config = deep_merge(config, nest(path, value))
    where = Path(os.path.abspath(root)) if root else None
    load_config(
        ConfigInputs(
            cwd=where or Path.cwd(),
            profile=profile,
            overrides=overrides,
            flags={"model": model, "sandbox_mode": sandbox, "harness": harness},
        )
    )
    return ServerDefaults(
        model=model, sandbox=sandbox, profile=profile, harness=harness, config=config, root=where
    )


#: With a sandbox ceiling (`-s`), the config keys a caller may set: what shapes the model's
#: work. Everything else could undo the ceiling from outside the sandbox (MCP servers, hooks
#: and notify run commands unsandboxed; providers could send the operator's API key
#: elsewhere; the sandbox keys themselves), so it is the operator's alone.
CALLER_CONFIG_KEYS = frozenset(
    {
        "model",
        "review_model",
        "model_reasoning_effort",
        "model_reasoning_summary",
        "model_verbosity",
        "model_context_window",
        "model_auto_compact_token_limit",
        "harness",
        "harness_guidance",
        # Text for the model; `model_instructions_file` is not here: it names a file the
        # runner reads outside the sandbox and sends to the provider.
        "developer_instructions",
        "project_doc_max_bytes",
        "project_doc_fallback_filenames",
        "tool_output_token_limit",
        "hide_agent_reasoning",
        "web_search",
        "features",
    }
)

#: The `features` a caller may not switch under a ceiling: the operator's hooks can be the
#: gate that blocks a command (PreToolUse), and switching them on could run hooks the
#: operator turned off, outside the sandbox.
OPERATOR_FEATURES = frozenset({"hooks", "codex_hooks"})


def _ceiling(defaults: ServerDefaults) -> str:
    return f"it runs with a sandbox ceiling (`interpreter mcp-server -s {defaults.sandbox}`)"


def choose_sandbox(defaults: ServerDefaults, asked: SandboxMode | None) -> SandboxMode | None:
    if asked is None:
        return defaults.sandbox
    ceiling = defaults.sandbox
    if ceiling is not None and SANDBOX_MODES.index(asked) > SANDBOX_MODES.index(ceiling):
        raise ToolError(
            f"sandbox {asked!r} is looser than this server allows ({ceiling!r}, set by "
            f"`interpreter mcp-server -s {ceiling}`): ask for {ceiling!r} or a stricter mode"
        )
    return asked


def _features_named(path: list[str], value: Any) -> set[str]:
    """The feature names a config entry sets (`features.hooks = x` or `features = {...}`)."""
    if len(path) > 1:
        return {path[1]}
    return {str(name) for name in value} if isinstance(value, Mapping) else set()


def _check_fallback_names(config: Mapping[str, Any]) -> None:
    """`project_doc_fallback_filenames` holds plain file names, whoever the caller: the
    runner reads them itself, outside the sandbox (an absolute name would read any file of
    the server's, its own environment included)."""
    from oiexec.config.settings import plain_filename

    for key, value in config.items():
        if key != "project_doc_fallback_filenames":
            continue
        names = value if isinstance(value, list) else [value]
        bad = [name for name in names if not isinstance(name, str) or not plain_filename(name)]
        if bad:
            raise ToolError(
                f"config.project_doc_fallback_filenames: {bad[0]!r} is not a plain file name; "
                "give names looked up in the project's directories (such as `CLAUDE.md`), "
                "without `/`, `..` or an absolute path"
            )


def check_config(defaults: ServerDefaults, config: Mapping[str, Any]) -> None:
    from oiexec.config.overrides import split_dotted_key

    _check_fallback_names(config)
    if defaults.sandbox is None:
        return
    refused: set[str] = set()
    for key, value in config.items():
        path = split_dotted_key(key)
        if path[0] not in CALLER_CONFIG_KEYS:
            refused.add(key)
        elif path[0] == "features":
            refused.update(
                f"features.{name}" for name in _features_named(path, value) & OPERATOR_FEATURES
            )
    if refused:
        raise ToolError(
            f"config key(s) {', '.join(sorted(refused))} cannot be set by a caller of this "
            f"server: {_ceiling(defaults)}, and only these keys are open to callers: "
            f"{', '.join(sorted(CALLER_CONFIG_KEYS))} (features except "
            f"{', '.join(sorted(OPERATOR_FEATURES))})"
        )


def choose_profile(defaults: ServerDefaults, asked: str | None) -> str | None:
    """The profile a run loads. Under a ceiling only the server's own: a profile is a layer
    of the operator's config that can set anything the ceiling closes to callers (network
    access, a permission profile, MCP servers, hooks), so naming one would open them."""
    if asked is None or asked == defaults.profile:
        return defaults.profile
    if defaults.sandbox is not None:
        own = f"`-p {defaults.profile}`" if defaults.profile else "the one its config chooses"
        raise ToolError(
            f"profile {asked!r} cannot be chosen by a caller of this server: {_ceiling(defaults)}"
            f", and a profile can set what the ceiling keeps from callers (network access, "
            f"permission profiles, MCP servers, hooks). Leave `profile` out to run with the "
            f"server's profile ({own})"
        )
    return asked


def check_thread(defaults: ServerDefaults, thread_id: str, started_here: bool) -> None:
    """Under a ceiling, only the threads this server started may be continued: a thread
    from elsewhere resumes with the settings it was made with (network access, extra
    writable directories), which may be looser than the ceiling."""
    if defaults.sandbox is not None and not started_here:
        raise ToolError(
            f"thread {thread_id!r} was not started by this server: {_ceiling(defaults)}, and "
            "a thread from elsewhere would continue with its own sandbox settings. Continue a "
            "threadId a `run` of this server returned, or start a new thread with `run`"
        )


def choose_cwd(defaults: ServerDefaults, asked: str | None) -> str | None:
    root = defaults.root
    if asked is None:
        return str(root) if root is not None else None
    if root is None:
        return asked
    # Relative to the root, as Codex resolves a relative cwd against the server's own.
    path = Path(os.path.realpath(root / Path(asked).expanduser()))
    if not path.is_relative_to(os.path.realpath(root)):
        raise ToolError(
            f"cwd {asked!r} is outside {str(root)!r}, the directory this server was started "
            "for (`interpreter mcp-server -C`): pass a directory inside it"
        )
    return str(path)
