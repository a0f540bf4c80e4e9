"""Editing the user's `config.toml` in place, as `interpreter mcp add|remove` do.

The file is the user's: their comments, key order, blank lines and quoting must survive an
edit, so it is parsed and rewritten with tomlkit (a round-tripping TOML library) rather than
loaded and dumped. Only the one table being changed is touched. The new text replaces the old
one atomically (a temporary file in the same directory, then a rename), so a crash or a full
disk never leaves half a config behind, and the file keeps its permission bits.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import Comment, Item, Table, Whitespace
from tomlkit.toml_document import TOMLDocument

from oiexec.core.errors import ConfigError
from oiexec.core.userfile import CONFIG_MAX, read_user_file_if_exists, user_text

__all__ = ["read_user_document", "remove_mcp_server", "set_mcp_server"]

MCP_SERVERS = "mcp_servers"


def read_user_document(path: Path) -> TOMLDocument:
    """The file as an editable document; an empty one when the file does not exist yet."""
    what = f"cannot read config file {path}"
    raw = read_user_file_if_exists(path, name=what, cap=CONFIG_MAX, error=ConfigError)
    if raw is None:
        return tomlkit.document()
    text = user_text(raw, name=what, error=ConfigError)
    try:
        return tomlkit.parse(text)
    except TOMLKitError as exc:
        raise ConfigError(
            f"invalid TOML in {path}: {exc}",
            hint="Fix the syntax at the line shown (see https://toml.io), then run it again.",
        ) from exc


def _servers_table(doc: TOMLDocument, path: Path, *, create: bool) -> Table | None:
    existing = doc.get(MCP_SERVERS)
    if existing is None:
        if not create:
            return None
        # A super table: only `[mcp_servers.<name>]` headers appear, as Codex writes them.
        table = tomlkit.table(is_super_table=True)
        doc[MCP_SERVERS] = table
        return table
    if not isinstance(existing, Table):
        # e.g. `mcp_servers = { docs = {...} }`: an inline table cannot take a nested
        # `[mcp_servers.x]` table, and rewriting the user's line would lose its layout.
        raise ConfigError(
            f"`{MCP_SERVERS}` in {path} is not a [{MCP_SERVERS}] table",
            hint=f"Write each server as its own [{MCP_SERVERS}.<name>] table, then try again.",
        )
    return existing


def _server_table(entry: dict[str, Any]) -> Table:
    table = tomlkit.table()
    for key, value in entry.items():
        if isinstance(value, dict):
            sub = tomlkit.table()
            for sub_key in sorted(value):
                sub[sub_key] = value[sub_key]
            table[key] = sub
        else:
            table[key] = value
    return table


def _innermost_last(table: Table) -> Table:
    body = table.value.body
    if body and body[-1][0] is not None and isinstance(body[-1][1], Table):
        return _innermost_last(body[-1][1])
    return table


def _take_trailing_comments(table: Table) -> list[Item]:
    """Takes the comment lines at the very end of `table` (of its last sub-table): tomlkit
    files a comment written above the next `[header]` there, so deleting or replacing the
    table would take the user's note about the next one with it."""
    body = _innermost_last(table).value.body
    end = len(body)
    while end and body[end - 1][0] is None:
        end -= 1
    if not any(isinstance(item, Comment) for _, item in body[end:]):
        return []
    taken = [item for _, item in body[end:]]
    del body[end:]  # key-less items after the last key: no key index moves
    return taken


def _append(table: Table, items: list[Item]) -> None:
    target = _innermost_last(table).value
    for item in items:
        target.append(None, item)


def set_mcp_server(path: Path, name: str, entry: dict[str, Any]) -> None:
    """Writes `[mcp_servers.<name>]` with `entry`'s keys, replacing any table of that name;
    dict values become sub-tables (`[mcp_servers.<name>.env]`)."""
    doc = read_user_document(path)
    expected = doc.unwrap()
    expected.setdefault(MCP_SERVERS, {})[name] = entry
    servers = _servers_table(doc, path, create=True)
    assert servers is not None  # created above when missing
    table = _server_table(entry)
    comments = _take_trailing_comments(servers[name]) if name in servers else []
    _append(table, comments)
    servers[name] = table
    body = _innermost_last(servers[name]).value.body
    if comments and isinstance(body[-1][1], Whitespace):
        # tomlkit separates an inserted table with a blank line: that would now fall
        # between the moved comment and the header it is about.
        del body[-1]
    write_document(path, doc, expected)


def remove_mcp_server(path: Path, name: str) -> bool:
    """Deletes `[mcp_servers.<name>]`; False (and the file untouched) when there is none."""
    if not path.exists():
        return False
    doc = read_user_document(path)
    servers = _servers_table(doc, path, create=False)
    if servers is None or name not in servers:
        return False
    expected = doc.unwrap()
    del expected[MCP_SERVERS][name]
    if not expected[MCP_SERVERS]:
        del expected[MCP_SERVERS]
    comments = _take_trailing_comments(servers[name])
    keys = list(servers)
    at = keys.index(name)
    del servers[name]
    if comments and at > 0:
        _append(servers[keys[at - 1]], comments)
    if not servers:
        # Leave no empty `[mcp_servers]` header behind after the last server goes.
        del doc[MCP_SERVERS]
    write_document(path, doc, expected)
    return True


def write_document(path: Path, doc: TOMLDocument, expected: dict[str, Any]) -> None:
    """Replaces the file with `doc`'s text atomically, keeping its mode, once the text is
    known to mean `expected` (the old settings with only the intended change)."""
    # A removed table leaves its blank lines behind; one newline at the end is enough.
    text = tomlkit.dumps(doc).rstrip("\n")
    text = text + "\n" if text else ""
    # tomlkit keeps layout, but some layouts (servers written as dotted keys at the top of
    # the file) make it put the new table where later keys would fall under it. Reading
    # the result back catches any such move before the user's settings change meaning.
    if tomllib.loads(text) != expected:
        raise ConfigError(
            f"cannot edit {MCP_SERVERS} in {path} without changing other settings: its "
            "layout is one this command does not rewrite safely",
            hint=f"Write each server as its own [{MCP_SERVERS}.<name>] table (no dotted "
            f"`{MCP_SERVERS}.x.y = ...` keys at the top level), then run it again.",
        )
    # A config.toml that links into a dotfiles checkout stays a link: the rename replaces
    # the file it points to, never the link itself.
    target = path.resolve()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        mode = target.stat().st_mode & 0o7777 if target.exists() else 0o600
        fd, tmp = tempfile.mkstemp(prefix=".config.", suffix=".toml.tmp", dir=target.parent)
    except OSError as exc:
        raise ConfigError(f"cannot write config file {path}: {exc}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise ConfigError(f"cannot write config file {path}: {exc}") from exc
