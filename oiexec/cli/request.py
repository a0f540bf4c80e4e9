"""From the parsed exec options to the `ExecRequest` the runner executes; shared by exec and
review, which take the same options."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from oiexec.runner.reports import ReportPaths
    from oiexec.runner.request import ExecRequest


def _path(params: dict[str, Any], key: str) -> Path | None:
    value = params.get(key)
    return Path(value).expanduser() if value else None


def report_paths(params: dict[str, Any]) -> ReportPaths:
    """The report files the parsed options name (opened before anything runs, and written on
    every exit from here on: runner/failure_reports)."""
    from oiexec.runner.reports import ReportPaths, untrusted_roots

    add_dirs = (Path(p).expanduser() for p in params.get("add_dirs", ()))
    return ReportPaths(
        untrusted=untrusted_roots(_path(params, "cd"), add_dirs),
        junit=_path(params, "junit_file"),
        diff=_path(params, "diff_file"),
        sarif=_path(params, "sarif_file"),
        markdown=_path(params, "markdown_file"),
        last_message=_path(params, "last_message_file"),
    )


def build_request(params: dict[str, Any], prompt: str, **extra: Any) -> ExecRequest:
    """The request for `prompt` from the parsed exec options; `extra` sets the session fields
    (`resume`, `fork_from`)."""
    from oiexec.runner.request import new_request

    warnings: list[str] = []
    if params.get("approval") and params["approval"] != "never":
        warnings.append(
            f"exec always runs with approval policy `never`; ignoring -a {params['approval']}"
        )
    overrides = [
        *(f"features.{f}=true" for f in params.get("enable_features", ())),
        *(f"features.{f}=false" for f in params.get("disable_features", ())),
        *params.get("config_overrides", ()),
    ]
    flags: dict[str, Any] = {
        "model": params.get("model"),
        "sandbox_mode": params.get("sandbox_mode"),
    }
    if params.get("oss") or params.get("local_provider"):
        flags["model_provider"] = params.get("local_provider") or "ollama"
    if params.get("chat_completions"):
        flags["chat_completions"] = True

    return new_request(
        prompt,
        cwd=params.get("cd") or None,
        cwd_name="--cd",
        profile=params.get("profile"),
        overrides=overrides,
        flags=flags,
        strict=bool(params.get("strict_config")),
        add_dirs=params.get("add_dirs", ()),
        images=tuple(Path(p).expanduser() for p in params.get("images", ())),
        skip_git_repo_check=bool(params.get("skip_git_repo_check")),
        ephemeral=bool(params.get("ephemeral")),
        ignore_rules=bool(params.get("ignore_rules")),
        json=bool(params.get("json_mode") or params.get("experimental_json")),
        color=params.get("color") or "auto",
        output_last_message=_path(params, "last_message_file"),
        output_schema_file=_path(params, "output_schema"),
        junit=_path(params, "junit_file"),
        diff=_path(params, "diff_file"),
        max_turns=params.get("max_turns"),
        timeout=params.get("timeout_s"),
        max_tokens=params.get("max_tokens"),
        max_cost=params.get("max_cost"),
        stall_turns=params.get("stall_turns"),
        dangerously_bypass=bool(params.get("bypass")),
        check=params.get("check"),
        max_attempts=params.get("max_attempts"),
        # Absolute now: the run may work elsewhere (-C), and resolves nothing against it.
        from_junit=tuple(
            Path(os.path.abspath(Path(p).expanduser())) for p in params.get("from_junit", ())
        ),
        require_change=bool(params.get("require_change")),
        append_system_prompt=params.get("append_system_prompt"),
        warnings=tuple(warnings),
        **extra,
    )
