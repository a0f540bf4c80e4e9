"""Applying unified diffs (DeepSeek TUI `apply_patch`, `git diff` output pasted by models).

Multi-file, all or nothing: every hunk of every file must apply before anything is written.
Hunks are located like `patch` does: at their stated line, else the nearest matching place,
then (with `fuzz`) ignoring whitespace differences and dropping up to `fuzz` context lines at
each end. Line counts in `@@` headers are trusted only as far as the hunk body agrees, because
models often get them wrong.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from oiexec.core.errors import ToolInputError
from oiexec.tools.fs._text import (
    WriteGuard,
    guard_write,
    load_text,
    remove_file,
    save_text,
    split_lines,
)

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_BARE_HUNK = re.compile(r"^@@+(?:\s.*)?$")
DEV_NULL = "/dev/null"


@dataclass
class Hunk:
    """One hunk: `old_start` is 1-based (0 for an insertion at the top); `lines` keep their
    ' ', '-', '+' markers. `*_no_newline` record `\\ No newline at end of file`."""

    old_start: int | None
    lines: list[str] = field(default_factory=list)
    old_no_newline: bool = False
    new_no_newline: bool = False

    @property
    def old(self) -> list[str]:
        return [line[1:] for line in self.lines if line[0] in " -"]

    @property
    def new(self) -> list[str]:
        return [line[1:] for line in self.lines if line[0] in " +"]


@dataclass
class FilePatch:
    """The hunks for one file; a path of None means /dev/null (creation or deletion)."""

    old_path: str | None
    new_path: str | None
    hunks: list[Hunk] = field(default_factory=list)


@dataclass(frozen=True)
class HunkReport:
    """Where a hunk landed: 1-based line, distance from where it claimed, fuzz used."""

    line: int
    offset: int
    fuzz: int
    whitespace_relaxed: bool


@dataclass(frozen=True)
class FileChange:
    """One file's outcome; `before` is None for a created file, `after` None for a deleted one."""

    path: Path
    kind: Literal["add", "update", "delete"]
    before: str | None
    after: str | None
    hunks: tuple[HunkReport, ...]
    moved_from: Path | None = None


def _clean_path(raw: str) -> str | None:
    name = raw.split("\t", 1)[0].strip()
    if name.startswith('"') and name.endswith('"') and len(name) > 1:
        name = name[1:-1]
    return None if name == DEV_NULL else name


def parse_unified_diff(text: str) -> list[FilePatch]:
    """Split a (multi-file) unified diff into per-file hunks; raises on malformed input."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    patches: list[FilePatch] = []
    i = 0
    while i < len(lines):
        line = lines[i].rstrip("\r")
        if _is_file_header(lines, i):
            patches.append(
                FilePatch(_clean_path(line[4:]), _clean_path(lines[i + 1].rstrip("\r")[4:]))
            )
            i += 2
        elif line.startswith("@@"):
            if not patches:
                raise ToolInputError(
                    "The diff has a hunk before any '--- a/file' / '+++ b/file' header.",
                    kind="patch_failed",
                )
            hunk, i = _parse_hunk(lines, i)
            patches[-1].hunks.append(hunk)
        else:
            i += 1  # `diff --git`, `index ...`, mode lines and prose between files
    if not patches:
        raise ToolInputError(
            "No file headers found: a unified diff needs '--- a/path' and '+++ b/path' lines "
            "followed by '@@ -start,count +start,count @@' hunks.",
            kind="patch_failed",
        )
    return patches


def _is_file_header(lines: Sequence[str], i: int) -> bool:
    return lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")


def _parse_hunk(lines: Sequence[str], i: int) -> tuple[Hunk, int]:
    header = lines[i].rstrip("\r")
    match = _HUNK.match(header)
    if match is None and not _BARE_HUNK.match(header):
        raise ToolInputError(f"Malformed hunk header: {header!r}", kind="patch_failed")
    old_left = new_left = -1  # unknown counts: read while lines look like hunk lines
    start: int | None = None
    if match:
        start = int(match.group(1))
        old_left = int(match.group(2)) if match.group(2) is not None else 1
        new_left = int(match.group(4)) if match.group(4) is not None else 1
    hunk = Hunk(start)
    i += 1
    while i < len(lines):
        raw = lines[i].rstrip("\r")
        counted = old_left > 0 or new_left > 0
        if raw.startswith("\\"):
            if hunk.lines:
                last = hunk.lines[-1][0]
                hunk.old_no_newline |= last in " -"
                hunk.new_no_newline |= last in " +"
            i += 1
            continue
        if raw == "" and counted:
            raw = " "  # an empty context line whose leading space was stripped
        if not raw or raw[0] not in " +-" or raw.startswith("@@") or _is_file_header(lines, i):
            break
        hunk.lines.append(raw)
        old_left -= raw[0] in " -"
        new_left -= raw[0] in " +"
        i += 1
    if not hunk.lines:
        raise ToolInputError(f"Hunk {header!r} has no lines.", kind="patch_failed")
    return hunk, i


def _matches(file_lines: Sequence[str], pos: int, want: Sequence[str], relaxed: bool) -> bool:
    if pos < 0 or pos + len(want) > len(file_lines):
        return False
    if relaxed:
        return all(a.strip() == b.strip() for a, b in zip(file_lines[pos:], want, strict=False))
    return list(file_lines[pos : pos + len(want)]) == list(want)


def _search(
    file_lines: Sequence[str], want: Sequence[str], expected: int, floor: int, relaxed: bool
) -> int | None:
    # Nearest match to the stated line first, never before the previous hunk's end.
    span = max(expected - floor, len(file_lines) - expected) + 1
    for distance in range(span):
        for pos in (expected - distance, expected + distance) if distance else (expected,):
            if pos >= floor and _matches(file_lines, pos, want, relaxed):
                return pos
    return None


def _leading_context(hunk: Hunk) -> int:
    n = 0
    while n < len(hunk.lines) and hunk.lines[n][0] == " ":
        n += 1
    return n


def _trailing_context(hunk: Hunk) -> int:
    n = 0
    while n < len(hunk.lines) and hunk.lines[-1 - n][0] == " ":
        n += 1
    return n


def _locate(
    lines: Sequence[str], hunk: Hunk, expected: int, floor: int, fuzz: int
) -> tuple[int, Hunk, HunkReport] | None:
    for level in range(fuzz + 1):
        for relaxed in (False, True) if fuzz else (False,):
            head = min(level, _leading_context(hunk))
            tail = min(level, _trailing_context(hunk))
            if level and not head and not tail:
                continue
            body = hunk.lines[head : len(hunk.lines) - tail]
            trimmed = Hunk(hunk.old_start, body, hunk.old_no_newline and not tail,
                           hunk.new_no_newline and not tail)  # fmt: skip
            pos = _search(lines, trimmed.old, expected + head, floor, relaxed)
            if pos is not None:
                report = HunkReport(pos + 1, pos - head - expected, level, relaxed)
                return pos, trimmed, report
    return None


def apply_hunks(
    text: str, hunks: Sequence[Hunk], *, fuzz: int = 0, label: str = "the file"
) -> tuple[str, tuple[HunkReport, ...]]:
    """`text` with `hunks` applied in order; raises `ToolInputError` on the first misfit."""
    lines = split_lines(text)
    crlf = "\r\n" in text
    final_newline = text.endswith("\n") or not text
    delta = 0
    floor = 0
    reports: list[HunkReport] = []
    for number, hunk in enumerate(hunks, start=1):
        stated = hunk.old_start if hunk.old_start is not None else 1
        expected = max(0, (stated if not hunk.old else stated - 1) + delta)
        found = _locate(lines, hunk, min(expected, len(lines)), floor, fuzz)
        if found is None:
            raise _misfit(label, number, hunk)
        pos, used, report = found
        old, new = used.old, _new_lines(used, lines, pos)
        reaches_end = pos + len(old) == len(lines)
        lines[pos : pos + len(old)] = new
        if reaches_end and new:
            final_newline = not used.new_no_newline
        delta += len(new) - len(old)
        floor = pos + len(new)
        reports.append(report)
    eol = "\r\n" if crlf else "\n"
    out = eol.join(lines)
    if lines and final_newline:
        out += eol
    return out, tuple(reports)


def _new_lines(hunk: Hunk, lines: Sequence[str], pos: int) -> list[str]:
    # Context lines keep the file's text: with whitespace relaxed, the patch's copy may differ.
    out: list[str] = []
    k = pos
    for line in hunk.lines:
        if line[0] == " ":
            out.append(lines[k])
        elif line[0] == "+":
            out.append(line[1:])
        k += line[0] in " -"
    return out


def _misfit(label: str, number: int, hunk: Hunk) -> ToolInputError:
    preview = "\n".join(hunk.old[:5]) or "(nothing)"
    where = f" near line {hunk.old_start}" if hunk.old_start is not None else ""
    return ToolInputError(
        f"Hunk {number} does not apply to {label}{where}: these lines were not found:\n"
        f"{preview}\nRe-read the file and regenerate the diff against its current content.",
        kind="patch_failed",
    )


def _strip(name: str, strip: int | None) -> str:
    if strip is None:
        return name[2:] if name[:2] in ("a/", "b/") else name
    parts = name.split("/")
    return "/".join(parts[strip:]) if strip < len(parts) else parts[-1]


def apply_unified_diff(
    diff: str,
    *,
    root: Path,
    can_write: WriteGuard,
    fuzz: int = 2,
    strip: int | None = None,
    create_if_missing: bool = False,
) -> list[FileChange]:
    """Apply a multi-file unified diff under `root`; returns what changed per file.

    `strip` removes that many leading path components (like `patch -p`); by default a leading
    `a/` or `b/` is removed. Every change is computed and every path cleared by `can_write`
    before the first file is written.
    """
    changes = [_plan(p, root, fuzz, strip, create_if_missing) for p in parse_unified_diff(diff)]
    for change in changes:
        guard_write(can_write, change.path)
        if change.moved_from is not None:
            guard_write(can_write, change.moved_from)
    for change in changes:
        if change.after is None:
            remove_file(change.path, can_write=can_write)
        else:
            save_text(change.path, change.after, can_write=can_write)
        if change.moved_from is not None and change.moved_from != change.path:
            remove_file(change.moved_from, can_write=can_write)
    return changes


def _plan(
    patch: FilePatch, root: Path, fuzz: int, strip: int | None, create_if_missing: bool
) -> FileChange:
    old = root / _strip(patch.old_path, strip) if patch.old_path else None
    new = root / _strip(patch.new_path, strip) if patch.new_path else None
    source = old or new
    assert source is not None  # the parser never yields a patch with both sides /dev/null
    creating = old is None or (create_if_missing and not source.exists())
    if creating and source.exists() and source.read_bytes():
        raise ToolInputError(
            f"The diff creates {source}, but that file already exists.", kind="exists", path=source
        )
    before = "" if creating else load_text(source)
    after, reports = apply_hunks(before, patch.hunks, fuzz=fuzz, label=str(source))
    if new is None:
        return FileChange(source, "delete", before, None, reports)
    moved = old if old is not None and old != new else None
    kind: Literal["add", "update"] = "add" if creating else "update"
    return FileChange(new, kind, None if creating else before, after, reports, moved)
