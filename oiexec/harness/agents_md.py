"""AGENTS.md discovery and the two context blocks of the first user message.

Global: `$OPENINTERPRETER_HOME/AGENTS.override.md`, else `AGENTS.md`. Project: every
directory from the git root down to the cwd contributes at most one file
(`AGENTS.override.md`, else `AGENTS.md`, else the fallback names in order), joined root to
leaf with blank lines; without a git root only the cwd is searched. `project_doc_max_bytes`
caps the combined project docs; the global doc is not counted against it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from xml.sax.saxutils import escape

from oiexec.core.policy import SandboxPolicy
from oiexec.git import find_project_root

__all__ = [
    "DEFAULT_FILENAME",
    "OVERRIDE_FILENAME",
    "discover_user_instructions",
    "environment_context",
    "policy_environment_context",
    "project_doc_paths",
    "read_global_doc",
    "read_project_docs",
    "render_user_instructions",
]

OVERRIDE_FILENAME = "AGENTS.override.md"
DEFAULT_FILENAME = "AGENTS.md"
DEFAULT_MAX_BYTES = 32 * 1024
PROJECT_DOC_SEPARATOR = "\n\n--- project-doc ---\n\n"


def _read_text(path: Path, limit: int | None = None) -> str | None:
    """The file's text, stripped, or None when missing, unreadable or blank."""
    try:
        with open(path, "rb") as file:
            data = file.read() if limit is None else file.read(limit)
    except OSError:
        return None
    text = data.decode("utf-8", "replace").strip()
    return text or None


def read_global_doc(home: Path) -> str | None:
    for name in (OVERRIDE_FILENAME, DEFAULT_FILENAME):
        path = home / name
        if path.is_file():
            return _read_text(path)
    return None


def project_doc_paths(
    cwd: Path,
    *,
    fallback_filenames: Sequence[str] = (),
    root_markers: Sequence[str] = (".git",),
) -> list[Path]:
    """The project docs that apply to `cwd`, root first."""
    cwd = cwd.resolve()
    root = find_project_root(cwd, root_markers)
    directories = [cwd]
    if root is not None:
        directories = [*(root / p for p in reversed(cwd.relative_to(root).parents)), cwd]
    names = [OVERRIDE_FILENAME, DEFAULT_FILENAME, *fallback_filenames]
    found: list[Path] = []
    for directory in directories:
        for name in dict.fromkeys(names):  # a fallback repeating a default counts once
            if (directory / name).is_file():
                found.append(directory / name)
                break
    return found


def _utf8_prefix(data: bytes, limit: int) -> bytes:
    """At most `limit` bytes of `data`, never ending inside a UTF-8 sequence."""
    if len(data) <= limit:
        return data
    cut = limit
    while cut > 0 and (data[cut] & 0xC0) == 0x80:
        cut -= 1
    return data[:cut]


def read_project_docs(
    cwd: Path,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    fallback_filenames: Sequence[str] = (),
    root_markers: Sequence[str] = (".git",),
) -> str | None:
    """The project docs joined root to leaf; the files' bytes are capped at `max_bytes` in
    total (0 disables project docs)."""
    remaining = max_bytes
    texts: list[str] = []
    for path in project_doc_paths(
        cwd, fallback_filenames=fallback_filenames, root_markers=root_markers
    ):
        if remaining <= 0:
            break
        try:
            with open(path, "rb") as file:
                # One byte more than allowed tells us where a UTF-8 character was cut.
                data = file.read(remaining + 1)
        except OSError:
            continue
        data = _utf8_prefix(data, remaining)
        remaining -= len(data)
        text = data.decode("utf-8", "replace").strip()
        if text:
            texts.append(text)
    return "\n\n".join(texts) if texts else None


def render_user_instructions(
    cwd: Path, global_doc: str | None, project_docs: str | None
) -> str | None:
    """The AGENTS.md block: the first input text of the first user message."""
    parts = [doc for doc in (global_doc, project_docs) if doc]
    if not parts:
        return None
    body = PROJECT_DOC_SEPARATOR.join(parts)
    return f"# AGENTS.md instructions for {cwd}\n\n<INSTRUCTIONS>\n{body}\n</INSTRUCTIONS>"


def discover_user_instructions(
    cwd: Path,
    *,
    home: Path,
    max_bytes: int = DEFAULT_MAX_BYTES,
    fallback_filenames: Sequence[str] = (),
    root_markers: Sequence[str] = (".git",),
) -> str | None:
    """Global and project docs for `cwd`, rendered; None when there are none."""
    return render_user_instructions(
        cwd,
        read_global_doc(home),
        read_project_docs(
            cwd,
            max_bytes=max_bytes,
            fallback_filenames=fallback_filenames,
            root_markers=root_markers,
        ),
    )


# --- environment context ------------------------------------------------------------------


def _timezone_name() -> str:
    """The IANA zone name when it can be known (TZ, /etc/localtime), else the abbreviation."""
    tz = os.environ.get("TZ", "").lstrip(":")
    if tz and "/" in tz and not tz.startswith("/"):
        return tz
    try:
        target = os.path.realpath("/etc/localtime")
    except OSError:
        target = ""
    if "zoneinfo/" in target:
        return target.split("zoneinfo/", 1)[1]
    return datetime.now().astimezone().tzname() or "UTC"


def policy_environment_context(cwd: Path, policy: SandboxPolicy) -> str:
    """The block for `cwd` under `policy`, in this process's shell."""
    return environment_context(
        cwd=cwd,
        shell=os.environ.get("SHELL", "/bin/bash"),
        sandbox_mode=policy.mode,
        network_access=not policy.network_disabled,
        writable_roots=[str(root) for root in policy.writable_roots()],
    )


def environment_context(
    *,
    cwd: Path,
    shell: str,
    sandbox_mode: str,
    network_access: bool,
    writable_roots: Sequence[str] = (),
    approval_policy: str = "never",
    now: datetime | None = None,
    timezone: str | None = None,
) -> str:
    """The `<environment_context>` block: the second input text of the first user message."""
    now = now or datetime.now().astimezone()
    lines = [
        "<environment_context>",
        f"  <cwd>{escape(str(cwd))}</cwd>",
        f"  <approval_policy>{escape(approval_policy)}</approval_policy>",
        f"  <sandbox_mode>{escape(sandbox_mode)}</sandbox_mode>",
        f"  <network_access>{'enabled' if network_access else 'restricted'}</network_access>",
    ]
    if writable_roots:
        lines.append("  <writable_roots>")
        lines.extend(f"    <root>{escape(root)}</root>" for root in writable_roots)
        lines.append("  </writable_roots>")
    lines += [
        f"  <shell>{escape(Path(shell).name or shell)}</shell>",
        f"  <current_date>{now.strftime('%Y-%m-%d')}</current_date>",
        f"  <timezone>{escape(timezone or _timezone_name())}</timezone>",
        "</environment_context>",
    ]
    return "\n".join(lines)
