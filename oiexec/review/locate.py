"""Check where each finding points: a real file, real lines, and lines the change touched.

Findings are never dropped here; they get a `location_status` and, when the file is found, a
repo-relative `relative_path` that SARIF, annotations and reports use.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from oiexec.git import GitError, run_git
from oiexec.review.identity import code_text, fingerprint
from oiexec.review.model import LocationStatus, ReviewFinding, ReviewOutput

__all__ = ["FileReader", "git_revision_reader", "locate_findings", "working_tree_reader"]

#: Returns the bytes of a repo-relative POSIX path, or None when there is no such file.
FileReader = Callable[[str], bytes | None]


#: More than any source file a finding points into; only its line count matters here.
_MAX_READ_BYTES = 16 * 1024 * 1024


def working_tree_reader(root: Path) -> FileReader:
    """Files of the repository under review, read through the one in-process reader: beneath
    `root` with no link out followed, regular files only, bounded (the repository may be
    hostile: `src/x.py -> /dev/zero` must not hang or grow the runner)."""
    from oiexec.sandbox.reader import ReadScope, read_file

    scope = ReadScope.confined(root)

    def read(relative: str) -> bytes | None:
        try:
            return read_file(scope, root / relative, max_bytes=_MAX_READ_BYTES, truncate=True).data
        except OSError:
            return None

    return read


def git_revision_reader(root: Path, revision: str) -> FileReader:
    """Read files as they are in `revision` (for `--commit`, whose lines may have moved since)."""

    def read(relative: str) -> bytes | None:
        try:
            done = run_git(["cat-file", "blob", f"{revision}:{relative}"], cwd=root)
        except GitError:
            return None  # unreadable counts as missing: the finding is kept, marked so
        return done.stdout if done.returncode == 0 else None

    return read


def locate_findings(
    review: ReviewOutput,
    repo_root: Path,
    changed: dict[str, set[int]] | None,
    *,
    revision: str | None = None,
) -> ReviewOutput:
    """Return `review` with every finding's location checked.

    `changed` comes from `targets.changed_lines` (None: nothing to compare with, custom
    instructions); `revision` from `ResolvedTarget.revision` (None: the working tree).
    """
    root = repo_root.resolve()
    reader = git_revision_reader(root, revision) if revision else working_tree_reader(root)
    findings = [_locate(f, root, changed, reader) for f in review.findings]
    return review.model_copy(update={"findings": findings})


def _locate(
    finding: ReviewFinding,
    root: Path,
    changed: dict[str, set[int]] | None,
    reader: FileReader,
) -> ReviewFinding:
    relative, content = _resolve(finding.code_location.absolute_file_path, root, reader)
    status: LocationStatus
    span = finding.code_location.line_range
    code: str | None = None
    if content is None or relative is None:
        status = "file_missing"
    elif span.end > _line_count(content):
        status = "line_out_of_range"
    else:
        code = code_text(content, span)
        if changed is None:
            status = "in_file"
        else:
            touched = changed.get(relative, set())
            hit = any(line in touched for line in range(span.start, span.end + 1))
            status = "in_diff" if hit else "outside_diff"
    located = finding.model_copy(update={"location_status": status, "relative_path": relative})
    # The fingerprint takes the flagged lines now, while they are read anyway: it is what
    # lets a later `review --baseline` recognise the finding after the code moved.
    return located.model_copy(update={"fingerprint": fingerprint(located, code)})


def _resolve(raw: str, root: Path, reader: FileReader) -> tuple[str | None, bytes | None]:
    """Find the repo file a model-written path means.

    Returns (relative path, content); the path alone when it names a place inside the repo
    where no file is, (None, None) when it does not name a place inside the repo at all.
    """
    candidates, anchored = _candidates(raw, root)
    for candidate in candidates:
        content = reader(candidate)
        if content is not None:
            return candidate, content
    return (candidates[0] if anchored and candidates else None), None


def _candidates(raw: str, root: Path) -> tuple[list[str], bool]:
    """Repo-relative paths `raw` may mean, best first, and whether the first is certain."""
    path = Path(raw.replace("\\", "/")).expanduser()
    if path.is_absolute():
        inside = _inside(Path(os.path.normpath(path)), root)
        if inside is None:
            inside = _inside(path.resolve(), root)
        if inside is not None:
            return [inside], True
        # An absolute path from another checkout of the same repository (a container mount,
        # the model's guess): accept the longest tail that names a repo file.
        parts = path.parts[1:]
        return [PurePosixPath(*parts[i:]).as_posix() for i in range(len(parts))], False
    relative = PurePosixPath(os.path.normpath(path.as_posix()))
    if not relative.parts or relative.parts[0] in {"..", "."}:
        return [], False
    candidates = [relative.as_posix()]
    if len(relative.parts) > 1 and relative.parts[0] in {"a", "b"}:
        candidates.append(PurePosixPath(*relative.parts[1:]).as_posix())  # diff-style prefix
    return candidates, True


def _inside(path: Path, root: Path) -> str | None:
    try:
        relative = path.relative_to(root)
    except ValueError:
        return None
    text = relative.as_posix()
    return None if text in {"", "."} else text


def _line_count(content: bytes) -> int:
    if not content:
        return 0
    return content.count(b"\n") + (0 if content.endswith(b"\n") else 1)
