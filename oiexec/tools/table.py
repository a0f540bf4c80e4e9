"""Every tool implementation a harness manifest can name in `impl`: where its code lives and
which options model checks its entry's `options` and `limits`.

One explicit table instead of registration as a side effect of importing the tool modules:
reading it imports no tool code (start-up pays only for the tools a run calls, when it first
calls them), and a manifest can be checked against it without running anything.
`oiexec.tools.framework.IMPLS` loads the functions from here on first lookup.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from oiexec.core.lazy import load

if TYPE_CHECKING:
    from oiexec.tools.options import ToolOptions

__all__ = ["TABLE", "ImplRef", "OptionsError", "load_function", "options_model", "tool_options"]


@dataclass(frozen=True)
class ImplRef:
    """Where one implementation lives."""

    #: `module:function`, imported on first use.
    target: str
    #: The class in `oiexec.tools.options` that its entries' options must fit.
    options: str = "ToolOptions"
    #: Receives the argument text as sent: no JSON parsing, no schema check.
    raw: bool = False


_ADAPTERS = "oiexec.tools.adapters"

TABLE: Mapping[str, ImplRef] = {
    # The Codex tools.
    "exec_command": ImplRef("oiexec.tools.exec_command:exec_command"),
    "write_stdin": ImplRef("oiexec.tools.exec_command:write_stdin"),
    "apply_patch": ImplRef("oiexec.tools.patch_tool:apply_patch", raw=True),
    "update_plan": ImplRef("oiexec.tools.update_plan:update_plan", raw=True),
    # Shells and background tasks.
    "shell": ImplRef(f"{_ADAPTERS}.shell:shell", "ShellOptions"),
    "task_output": ImplRef(f"{_ADAPTERS}.background:task_output", "TaskOutputOptions"),
    "task_stop": ImplRef(f"{_ADAPTERS}.background:task_stop"),
    "execute": ImplRef(f"{_ADAPTERS}.execute:execute", "ExecuteOptions"),
    # Files.
    "fs_read": ImplRef(f"{_ADAPTERS}.files:fs_read", "FsReadOptions"),
    "fs_write": ImplRef(f"{_ADAPTERS}.files:fs_write", "FsWriteOptions"),
    "fs_replace": ImplRef(f"{_ADAPTERS}.files:fs_replace", "FsReplaceOptions"),
    "glob": ImplRef(f"{_ADAPTERS}.files:glob_tool", "GlobOptions"),
    "grep": ImplRef(f"{_ADAPTERS}.files:grep_tool", "GrepOptions"),
    "list": ImplRef(f"{_ADAPTERS}.files:list_tool", "ListOptions"),
    # Patches in other formats, SWE-agent's editor and submit.
    "apply_patch_envelope": ImplRef(f"{_ADAPTERS}.patch:apply_patch_envelope"),
    "unified_diff": ImplRef(f"{_ADAPTERS}.patch:unified_diff"),
    "str_replace_editor": ImplRef(f"{_ADAPTERS}.editor:str_replace_editor", "EditorOptions"),
    "submit": ImplRef(f"{_ADAPTERS}.editor:submit", "SubmitOptions"),
    # Todo lists and tasks.
    "todo_write": ImplRef(f"{_ADAPTERS}.todo:todo_write", "TodoWriteOptions"),
    "plan_write": ImplRef(f"{_ADAPTERS}.todo:plan_write", "TodoOptions"),
    "task_create": ImplRef(f"{_ADAPTERS}.todo:task_create"),
    "task_update": ImplRef(f"{_ADAPTERS}.todo:task_update"),
    "task_list": ImplRef(f"{_ADAPTERS}.todo:task_list"),
    "task_get": ImplRef(f"{_ADAPTERS}.todo:task_get"),
    "todo_read": ImplRef(f"{_ADAPTERS}.todo:todo_read"),
}


class OptionsError(ValueError):
    """A tool entry's options do not fit its implementation's model."""


def load_function(name: str) -> Callable[..., Any]:
    """The implementation `name` of the table, importing its module."""
    loaded: Callable[..., Any] = load(TABLE[name].target)
    return loaded


def options_model(name: str) -> type[ToolOptions]:
    """The options model of the implementation `name` of the table."""
    from oiexec.tools import options

    model: type[ToolOptions] = getattr(options, TABLE[name].options)
    return model


def tool_options(
    tool: str, impl: str, options: Mapping[str, Any], limits: Mapping[str, int]
) -> ToolOptions:
    """An entry's `options` and `limits` as its implementation's model (a key in both: the
    limit wins, as it always has); `OptionsError` names the key and what is accepted."""
    from pydantic import ValidationError

    model = options_model(impl)
    try:
        return model.model_validate({**options, **limits})
    except ValidationError as exc:
        raise OptionsError(_explain(tool, impl, model, exc, limits)) from None


def _explain(
    tool: str, impl: str, model: type[ToolOptions], exc: Any, limits: Mapping[str, int]
) -> str:
    problems: list[str] = []
    for error in exc.errors():
        key = ".".join(str(part) for part in error["loc"])
        table = "limits" if key in limits else "options"
        if error["type"] == "extra_forbidden":
            problems.append(f"unknown key `{key}` in `{table}`")
        else:
            problems.append(f"`{key}` in `{table}`: {error['msg']} (got {error['input']!r})")
    fields = model.model_fields
    if fields:
        accepted = ", ".join(f"{k} ({_type_name(f.annotation)})" for k, f in fields.items())
        hint = f"`{impl}` accepts: {accepted}"
    else:
        hint = f"`{impl}` takes no options"
    return f"tool `{tool}` (impl `{impl}`): {'; '.join(problems)}; {hint}"


def _type_name(annotation: Any) -> str:
    if isinstance(annotation, type) and not getattr(annotation, "__args__", None):
        return annotation.__name__
    return str(annotation).replace("typing.", "")
