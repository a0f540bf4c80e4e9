"""Unified diffs (DeepSeek TUI's `apply_patch`, `git diff` output pasted by models): parsing
them into the change model, and how their hunks are matched and their misses explained.

Hunks are located like `patch` does: at their stated line, else the nearest matching place,
then (with `fuzz`) ignoring whitespace differences and dropping up to `fuzz` context lines at
each end. Line counts in `@@` headers are trusted only as far as the hunk body agrees, because
models often get them wrong.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from oiexec.sandbox.writer import WriteGuard, as_writer
from oiexec.tools.apply_patch.match import HunkReport, Miss, Rules, exact
from oiexec.tools.apply_patch.model import (
    ApplyPatchError,
    Chunk,
    DeleteFile,
    FileChange,
    Hunk,
    LineOp,
    Patch,
    UpdateFile,
)
from oiexec.tools.apply_patch.plan import absolute, apply
from oiexec.tools.apply_patch.text import patch_text

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_BARE_HUNK = re.compile(r"^@@+(?:\s.*)?$")
DEV_NULL = "/dev/null"


def _failed(message: str) -> ApplyPatchError:
    return ApplyPatchError(message, kind="patch_failed")


@dataclass
class _Section:
    """One file's header and hunks; a path of None means /dev/null (creation or deletion)."""

    old: str | None
    new: str | None
    chunks: list[Chunk] = field(default_factory=list)

    def hunk(self) -> Hunk:
        chunks = tuple(self.chunks)
        if self.old is None:
            assert self.new is not None  # both sides /dev/null is never a header
            return UpdateFile(self.new, chunks, create=True)
        if self.new is None:
            return DeleteFile(self.old, chunks)
        return UpdateFile(self.old, chunks, self.new if self.new != self.old else None)


def _strip(name: str | None, strip: int | None) -> str | None:
    if name is None:
        return None
    if strip is None:
        return name[2:] if name[:2] in ("a/", "b/") else name
    parts = name.split("/")
    return "/".join(parts[strip:]) if strip < len(parts) else parts[-1]


def _clean_path(raw: str, strip: int | None) -> str | None:
    name = raw.split("\t", 1)[0].strip()
    if name.startswith('"') and name.endswith('"') and len(name) > 1:
        name = name[1:-1]
    return None if name == DEV_NULL else _strip(name, strip)


def parse_unified_diff(text: str, *, strip: int | None = None) -> Patch:
    """A (multi-file) unified diff as a patch; raises on malformed input. `strip` removes
    that many leading path components (like `patch -p`); by default a leading `a/` or `b/`."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    sections: list[_Section] = []
    i = 0
    while i < len(lines):
        line = lines[i].rstrip("\r")
        if _is_file_header(lines, i):
            new = _clean_path(lines[i + 1].rstrip("\r")[4:], strip)
            sections.append(_Section(_clean_path(line[4:], strip), new))
            i += 2
        elif line.startswith("@@"):
            if not sections:
                raise _failed("The diff has a hunk before any '--- a/file' / '+++ b/file' header.")
            chunk, i = _parse_hunk(lines, i)
            sections[-1].chunks.append(chunk)
        else:
            i += 1  # `diff --git`, `index ...`, mode lines and prose between files
    if not sections:
        raise _failed(
            "No file headers found: a unified diff needs '--- a/path' and '+++ b/path' lines "
            "followed by '@@ -start,count +start,count @@' hunks."
        )
    return Patch(tuple(section.hunk() for section in sections))


def _is_file_header(lines: Sequence[str], i: int) -> bool:
    return lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")


def _parse_hunk(lines: Sequence[str], i: int) -> tuple[Chunk, int]:
    header = lines[i].rstrip("\r")
    match = _HUNK.match(header)
    if match is None and not _BARE_HUNK.match(header):
        raise _failed(f"Malformed hunk header: {header!r}")
    old_left = new_left = -1  # unknown counts: read while lines look like hunk lines
    start: int | None = None
    if match:
        start = int(match.group(1))
        old_left = int(match.group(2)) if match.group(2) is not None else 1
        new_left = int(match.group(4)) if match.group(4) is not None else 1
    body: list[tuple[LineOp, str]] = []
    no_newline = False  # `\ No newline at end of file` after a line of the new side
    i += 1
    while i < len(lines):
        raw = lines[i].rstrip("\r")
        counted = old_left > 0 or new_left > 0
        if raw.startswith("\\"):
            no_newline |= bool(body) and body[-1][0] in " +"
            i += 1
            continue
        if raw == "" and counted:
            raw = " "  # an empty context line whose leading space was stripped
        if not raw or raw[0] not in " +-" or raw.startswith("@@") or _is_file_header(lines, i):
            break
        op: LineOp = " " if raw[0] == " " else "-" if raw[0] == "-" else "+"
        body.append((op, raw[1:]))
        old_left -= op in " -"
        new_left -= op in " +"
        i += 1
    if not body:
        raise _failed(f"Hunk {header!r} has no lines.")
    return Chunk(tuple(body), line=start, final_newline=not no_newline), i


def _explain(miss: Miss) -> ApplyPatchError:
    preview = "\n".join(miss.chunk.old_lines[:5]) or "(nothing)"
    where = f" near line {miss.chunk.line}" if miss.chunk.line is not None else ""
    return ApplyPatchError(
        f"Hunk {miss.number} does not apply to {miss.path}{where}: these lines were not found:"
        f"\n{preview}\nRe-read the file and regenerate the diff against its current content.",
        kind="patch_failed",
        path=miss.path,
    )


def rules(fuzz: int) -> Rules:
    """Exact lines near the stated line; with `fuzz`, whitespace ignored and up to `fuzz`
    context lines dropped at each end."""
    ladder = (exact, str.strip) if fuzz else (exact,)
    return Rules(ladder=ladder, explain=_explain, fuzz=fuzz, by_line=True)


def apply_hunks(
    text: str, chunks: Sequence[Chunk], *, fuzz: int = 0, label: str = "the file"
) -> tuple[str, tuple[HunkReport, ...]]:
    """`text` with `chunks` applied in order, and where each landed; raises
    `ApplyPatchError` on the first misfit."""
    return patch_text(text, chunks, rules(fuzz), label)


def apply_unified_diff(
    diff: str,
    *,
    root: Path,
    can_write: WriteGuard,
    fuzz: int = 2,
    strip: int | None = None,
    create_if_missing: bool = False,
) -> list[FileChange]:
    """Apply a multi-file unified diff under `root`, all or nothing; returns what changed per
    file (a rename as an update of the old path, with the new one in `move_path`).

    With `create_if_missing`, a diff against a file that does not exist creates it.
    """
    patch = parse_unified_diff(diff, strip=strip)
    if create_if_missing:
        patch = Patch(tuple(_created_if_missing(hunk, root) for hunk in patch.hunks))
    result = apply(patch, root, as_writer(can_write), rules(fuzz))
    return list(result.changes)


def _created_if_missing(hunk: Hunk, root: Path) -> Hunk:
    if isinstance(hunk, UpdateFile) and not absolute(root, hunk.path).exists():
        return replace(hunk, create=True)
    return hunk
