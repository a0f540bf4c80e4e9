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
from html import escape as _html_escape
from pathlib import Path

from oiexec.config.settings import plain_filename
from oiexec.core.policy import SandboxPolicy
from oiexec.git import find_project_root
from oiexec.sandbox.reader import ReadRefused, ReadScope, judge, read_file

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


def escape(text: str) -> str:
    """`&`, `<` and `>` as XML entities (quotes are left: the values sit between tags), as
    `xml.sax.saxutils.escape` does, without the xml package's six modules on every run."""
    return _html_escape(text, quote=False)


#: The global doc is not counted against `project_doc_max_bytes`; it is still read bounded.
GLOBAL_MAX_BYTES = 1024 * 1024


def _read_text(scope: ReadScope, path: Path, limit: int) -> str | None:
    """At most `limit` bytes of the file, as stripped text; None when it is missing, not a
    regular file, outside `scope`, unreadable or blank."""
    try:
        data = read_file(scope, path, max_bytes=limit, truncate=True).data
    except OSError:
        return None
    text = data.decode("utf-8", "replace").strip()
    return text or None


def _is_doc(scope: ReadScope, path: Path) -> bool:
    """Whether `path` is a regular file the scope lets the runner read: a repository's
    `AGENTS.md -> /proc/1/environ` (or a FIFO, or a link out of the repository) is not a doc."""
    try:
        real = judge(scope, path)
        return os.path.isfile(real) and not os.path.islink(real)
    except (ReadRefused, OSError):
        return False


def read_global_doc(home: Path) -> str | None:
    # The user's own home: no tree to stay in, but still a regular file read bounded.
    scope = ReadScope()
    for name in (OVERRIDE_FILENAME, DEFAULT_FILENAME):
        path = home / name
        if _is_doc(scope, path):
            return _read_text(scope, path, GLOBAL_MAX_BYTES)
    return None


def _doc_scope(cwd: Path, root_markers: Sequence[str], deny: Sequence[Path]) -> ReadScope:
    """The project's files, nothing they link to outside it: the repository may be untrusted
    (a reviewed pull request) and its docs go to the model."""
    root = find_project_root(cwd.resolve(), root_markers)
    return ReadScope.confined(root if root is not None else cwd.resolve(), deny=deny)


def project_doc_paths(
    cwd: Path,
    *,
    fallback_filenames: Sequence[str] = (),
    root_markers: Sequence[str] = (".git",),
    deny: Sequence[Path] = (),
) -> list[Path]:
    """The project docs that apply to `cwd`, root first."""
    cwd = cwd.resolve()
    root = find_project_root(cwd, root_markers)
    scope = _doc_scope(cwd, root_markers, deny)
    directories = [cwd]
    if root is not None:
        directories = [*(root / p for p in reversed(cwd.relative_to(root).parents)), cwd]
    # Settings and MCP callers check fallback names; a name with a directory part is never
    # looked up here either.
    fallbacks = [name for name in fallback_filenames if plain_filename(name)]
    names = [OVERRIDE_FILENAME, DEFAULT_FILENAME, *fallbacks]
    found: list[Path] = []
    for directory in directories:
        for name in dict.fromkeys(names):  # a fallback repeating a default counts once
            if _is_doc(scope, directory / name):
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
    deny: Sequence[Path] = (),
) -> str | None:
    """The project docs joined root to leaf; the files' bytes are capped at `max_bytes` in
    total (0 disables project docs). Each is read through `oiexec.sandbox.reader`: beneath
    the project, regular files only, deny rules applied."""
    remaining = max_bytes
    texts: list[str] = []
    scope = _doc_scope(cwd, root_markers, deny)
    for path in project_doc_paths(
        cwd, fallback_filenames=fallback_filenames, root_markers=root_markers, deny=deny
    ):
        if remaining <= 0:
            break
        try:
            # One byte more than allowed tells us where a UTF-8 character was cut.
            data = read_file(scope, path, max_bytes=remaining + 1, truncate=True).data
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
    deny: Sequence[Path] = (),
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
            deny=deny,
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
