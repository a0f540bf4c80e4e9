"""`--diff`: the patch a run made to the workspace, from a snapshot taken at the start.

A snapshot is a git tree of the worktree (tracked and untracked, ignored files left out),
built in a private index file so the user's index, HEAD and stash are never touched. Blob
and tree objects land in the repository's object store, where unreferenced objects are
harmless and eventually pruned. Outside a repository a throwaway git dir in a temp directory
plays the same role.

The patch comes from `git diff --binary --full-index` between two such trees, so `git apply`
accepts it on a clean copy of the start state, binary files and renames included. Git runs
through `oiexec.git` (hardened, with timeouts); its failures surface as `GitError`.

The patch is bounded (`bounded_diff`): a file whose old or new content is bigger than
`MAX_FILE_BYTES`, and the changes past `MAX_PATCH_BYTES` of patch, are listed in a comment at
the top of the patch (`git apply` skips it) and left out, never inlined. Sizes come from git's
object store before any patch text is made, and the left-out files are taken out of the tree
the patch is made from, so neither git nor the runner ever holds them: a 300 MiB file in the
change costs a line, not a 386 MiB patch and gigabytes of memory.
"""

from __future__ import annotations

import shutil
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from oiexec.core import rundirs
from oiexec.git import run_git
from oiexec.output.reportfile import write_report

__all__ = ["MAX_FILE_BYTES", "MAX_PATCH_BYTES", "Baseline", "Omitted", "bounded_diff"]

#: A changed file bigger than this (before or after) is listed in the patch, not inlined.
MAX_FILE_BYTES = 8 * 1024 * 1024
#: What the patch may hold in all; the changes past it are listed, not inlined.
MAX_PATCH_BYTES = 32 * 1024 * 1024
#: Room for a file's headers, and the worst growth of its content in a patch: every byte of
#: both sides shown once, each line with its `+`/`-`/` ` (binary hunks grow by 5/4 at most).
_HEADER_BYTES = 1024
_GROWTH = 2
_NULL_OID = "0" * 40

# User config that would change what the patch looks like or make it unappliable.
_STABLE_CONFIG = (
    "core.quotepath=false",
    "diff.noprefix=false",
    "diff.mnemonicPrefix=false",
    "diff.relative=false",
    "diff.renames=true",
    "advice.addEmbeddedRepo=false",
    "core.safecrlf=false",
    # Files above this are streamed into the object store, not read whole into git's memory.
    f"core.bigFileThreshold={MAX_FILE_BYTES}",
)


def _index_env(index: Path) -> dict[str, str]:
    return {"GIT_INDEX_FILE": str(index)}


def _find_repository(workspace: Path) -> tuple[Path, Path] | None:
    """(work tree root, git dir) of the repository containing `workspace`, if any."""
    done = run_git(["rev-parse", "--show-toplevel", "--absolute-git-dir"], cwd=workspace)
    lines = done.stdout.decode("utf-8", "surrogateescape").splitlines()
    if done.returncode != 0 or len(lines) != 2 or not lines[0]:
        return None
    return Path(lines[0]), Path(lines[1])


class Baseline:
    """The worktree as it was when the run started. Call `close` (or rely on garbage
    collection) to remove the private index and any throwaway git dir."""

    def __init__(self, work_tree: Path, git_dir: Path, tmp: Path, tree: str) -> None:
        self.work_tree = work_tree
        self.git_dir = git_dir
        self.tree = tree
        self._tmp = tmp
        self._index = tmp / "index"
        #: The changes the last `diff_bytes` listed but left out.
        self.omitted: tuple[Omitted, ...] = ()
        #: The paths the last `diff_bytes` found changed (a rename's new name); None before
        #: it ran (the CI step summary lists them).
        self.changed: tuple[str, ...] | None = None
        self._finalizer = weakref.finalize(self, shutil.rmtree, tmp, ignore_errors=True)

    @classmethod
    def capture(cls, workspace: Path) -> Baseline:
        """Snapshots `workspace` (the whole repository around it, when there is one)."""
        workspace = workspace.resolve()
        tmp = rundirs.make("oiexec-diff-")
        try:
            found = _find_repository(workspace)
            if found is not None:
                work_tree, git_dir = found
                _seed_index(git_dir, work_tree, tmp / "index")
            else:
                work_tree, git_dir = workspace, tmp / "git"
                run_git(["init", "-q", "--bare", str(git_dir)], cwd=tmp, check=True)
            tree = _snapshot(work_tree, git_dir, tmp / "index")
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return cls(work_tree, git_dir, tmp, tree)

    def snapshot(self) -> str:
        """A tree of the worktree as it is now."""
        self._check_open()
        return _snapshot(self.work_tree, self.git_dir, self._index)

    def diff_bytes(self) -> bytes:
        """The patch from the baseline to the current worktree as git wrote it, bounded (see
        `bounded_diff`: files too big for it are listed at the top, not inlined)."""
        now = self.snapshot()
        if now == self.tree:
            self.omitted, self.changed = (), ()
            return b""
        prefix = _git_prefix(self.work_tree, self.git_dir)
        # Tree to tree: no worktree scan, cheap next to the patch itself.
        changes = _raw_changes(prefix, self.work_tree, self.tree, now)
        self.changed = tuple(change.paths[-1] for change in changes)
        patch, self.omitted = bounded_diff(
            self.work_tree,
            prefix,
            self.tree,
            now,
            scratch=self._tmp,
        )
        return patch

    def diff(self) -> str:
        """The patch as text. Non-UTF-8 file content is replaced; use `diff_bytes` or
        `write` for a byte-exact patch."""
        return self.diff_bytes().decode("utf-8", "replace")

    def write(self, path: Path) -> None:
        write_report(path, self.diff_bytes())

    def close(self) -> None:
        self._finalizer()

    def __enter__(self) -> Baseline:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if not self._finalizer.alive:
            raise RuntimeError("baseline is closed")


def _git_prefix(work_tree: Path, git_dir: Path) -> list[str]:
    config = [part for item in _STABLE_CONFIG for part in ("-c", item)]
    return [f"--git-dir={git_dir}", f"--work-tree={work_tree}", *config]


def _seed_index(git_dir: Path, work_tree: Path, index: Path) -> None:
    """Starts the private index from the user's one: its stat cache lets `git add -A` skip
    rehashing unchanged files, which is what keeps big repositories fast."""
    real = git_dir / "index"
    if real.is_file():
        shutil.copyfile(real, index)
        return
    # No index yet (fresh clone without checkout, or an unborn branch): start from HEAD.
    env = _index_env(index)
    head = run_git(["rev-parse", "--verify", "-q", "HEAD^{tree}"], cwd=work_tree, extra_env=env)
    if head.returncode == 0:
        run_git(
            [*_git_prefix(work_tree, git_dir), "read-tree", head.stdout.decode().strip()],
            cwd=work_tree,
            extra_env=env,
            check=True,
        )


def _snapshot(work_tree: Path, git_dir: Path, index: Path) -> str:
    prefix = _git_prefix(work_tree, git_dir)
    env = _index_env(index)
    # An unreadable file must not cost the whole patch: git adds everything else and exits
    # non-zero, and the tree is still written.
    run_git([*prefix, "add", "--all", "--ignore-errors", "--", "."], cwd=work_tree, extra_env=env)
    done = run_git([*prefix, "write-tree"], cwd=work_tree, extra_env=env, check=True)
    return done.stdout.decode().strip()


# --- the bounded patch -----------------------------------------------------------------------


@dataclass(frozen=True)
class Omitted:
    """A change listed in the patch but not inlined."""

    path: str
    size: int
    status: str
    why: str

    def line(self) -> str:
        what = {"A": "added", "D": "deleted", "R": "renamed", "C": "copied", "T": "type changed"}
        name = self.path.replace("\n", "\\n")
        return f"#   {name} ({what.get(self.status, 'modified')}, {self.size} bytes): {self.why}"


@dataclass(frozen=True)
class _Change:
    old_mode: str
    new_mode: str
    old_oid: str
    new_oid: str
    status: str
    paths: tuple[str, ...]


def _raw_changes(prefix: Sequence[str], cwd: Path, old: str, new: str) -> list[_Change]:
    """The changed entries between two trees, in the order `git diff` writes them."""
    done = run_git(
        [*prefix, "diff", "--raw", "-z", "--no-abbrev", "--find-renames", old, new],
        cwd=cwd,
        check=True,
    )
    fields = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    changes: list[_Change] = []
    index = 0
    while index < len(fields) and fields[index].startswith(":"):
        old_mode, new_mode, old_oid, new_oid, status = fields[index][1:].split(" ")
        count = 2 if status[:1] in ("R", "C") else 1
        paths = tuple(fields[index + 1 : index + 1 + count])
        changes.append(_Change(old_mode, new_mode, old_oid, new_oid, status[:1], paths))
        index += 1 + count
    return changes


def _sizes(prefix: Sequence[str], cwd: Path, oids: set[str]) -> dict[str, int]:
    """The size of each blob (a submodule's commit is no blob: it costs nothing here)."""
    wanted = sorted(oids - {_NULL_OID})
    if not wanted:
        return {}
    done = run_git(
        [*prefix, "cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)"],
        cwd=cwd,
        input="".join(f"{oid}\n" for oid in wanted).encode(),
        check=True,
    )
    sizes: dict[str, int] = {}
    for line in done.stdout.decode("ascii", "replace").splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "blob":
            sizes[parts[0]] = int(parts[2])
    return sizes


def _choose(
    changes: Sequence[_Change], sizes: Mapping[str, int], max_file: int, max_patch: int
) -> list[tuple[_Change, Omitted]]:
    """The changes to leave out: too big alone, or past the patch's budget."""
    left_out: list[tuple[_Change, Omitted]] = []
    budget = max_patch
    for change in changes:
        old, new = sizes.get(change.old_oid, 0), sizes.get(change.new_oid, 0)
        biggest = max(old, new)
        cost = _GROWTH * (old + new) + _HEADER_BYTES
        why = None
        if biggest > max_file:
            why = f"bigger than the {_mib(max_file)} a file may add to the patch"
        elif cost > budget:
            why = f"the patch reached its {_mib(max_patch)} cap"
        else:
            budget -= cost
        if why is not None:
            left_out.append((change, Omitted(change.paths[-1], biggest, change.status, why)))
    return left_out


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):g} MiB"


def _without(
    prefix: Sequence[str], cwd: Path, tree: str, changes: Sequence[_Change], index: Path
) -> str:
    """`tree` with `changes` undone: each path put back as it was in the old tree."""
    env = _index_env(index)
    run_git([*prefix, "read-tree", tree], cwd=cwd, extra_env=env, check=True)
    entries: list[str] = []
    for change in changes:
        if len(change.paths) == 2 and change.status == "C":
            entries.append(f"0 {_NULL_OID}\t{change.paths[1]}")  # the copy goes, its source stays
            continue
        source = change.paths[0]
        if change.old_oid == _NULL_OID:
            entries.append(f"0 {_NULL_OID}\t{source}")
        else:
            entries.append(f"{change.old_mode} {change.old_oid}\t{source}")
        if len(change.paths) == 2:  # a rename: its new name goes
            entries.append(f"0 {_NULL_OID}\t{change.paths[1]}")
    data = "".join(f"{entry}\0" for entry in entries).encode("utf-8", "surrogateescape")
    run_git(
        [*prefix, "update-index", "-z", "--index-info"],
        cwd=cwd,
        extra_env=env,
        input=data,
        check=True,
    )
    done = run_git([*prefix, "write-tree"], cwd=cwd, extra_env=env, check=True)
    return done.stdout.decode().strip()


def bounded_diff(
    work_tree: Path,
    prefix: Sequence[str],
    old: str,
    new: str,
    *,
    scratch: Path,
    max_file_bytes: int = MAX_FILE_BYTES,
    max_patch_bytes: int = MAX_PATCH_BYTES,
) -> tuple[bytes, tuple[Omitted, ...]]:
    """The patch from tree `old` to tree `new` (git options `prefix` name the repository),
    with the changes too big for it listed at its top and left out. `scratch` is a private
    directory for a temporary index."""
    changes = _raw_changes(prefix, work_tree, old, new)
    oids = {oid for c in changes for oid in (c.old_oid, c.new_oid)}
    left_out = _choose(changes, _sizes(prefix, work_tree, oids), max_file_bytes, max_patch_bytes)
    target = new
    if left_out:
        index = scratch / "bounded-index"
        target = _without(prefix, work_tree, new, [c for c, _ in left_out], index)
    done = run_git(
        [
            *prefix,
            "diff",
            "--binary",
            "--full-index",
            "--find-renames",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            old,
            target,
        ],
        cwd=work_tree,
        check=True,
    )
    omitted = tuple(o for _, o in left_out)
    if not omitted:
        return done.stdout, ()
    count = len(omitted)
    header = [
        f"# oiexec: {count} changed file{'s' if count > 1 else ''} listed here "
        f"{'are' if count > 1 else 'is'} not in this patch (not inlined; git apply skips "
        "these lines):",
        *(o.line() for o in omitted),
        "",
    ]
    return "\n".join(header).encode("utf-8", "surrogateescape") + done.stdout, omitted
