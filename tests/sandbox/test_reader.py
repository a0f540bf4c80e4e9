"""`sandbox.reader`, the one reader of files the runner opens in its own process: beneath
the workspace and writable roots with no link out followed, regular files only, nothing on
/proc or /sys, deny rules applied, bounded; and the tools, AGENTS.md and review over it."""

from __future__ import annotations

import os
import resource
import threading
from pathlib import Path

import pytest

from oiexec.core.errors import ToolInputError
from oiexec.core.policy import SandboxPolicy
from oiexec.harness.agents_md import read_project_docs
from oiexec.review.locate import working_tree_reader
from oiexec.sandbox import beneath
from oiexec.sandbox.reader import ReadRefused, ReadScope, read_file
from oiexec.tools.fs import GrepQuery, glob_files, grep, list_directory, read_window

SECRET = "OIEXEC-READER-SECRET-7f3a"


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace and a directory outside it holding a secret."""
    ws = tmp_path / "ws"
    outside = tmp_path / "outside"
    (ws / "docs").mkdir(parents=True)
    outside.mkdir()
    (ws / "README.md").write_text("hello\n")
    (ws / "docs" / "guide.md").symlink_to("../README.md")  # in-tree: followed
    (outside / "secret.txt").write_text(f"{SECRET}\n")
    (ws / "out").symlink_to(outside / "secret.txt")
    (ws / "outdir").symlink_to(outside)
    (ws / "environ").symlink_to("/proc/self/environ")
    (ws / "zero").symlink_to("/dev/zero")
    os.mkfifo(ws / "fifo")
    return ws, outside


def _scope(ws: Path, deny: tuple[Path, ...] = ()) -> ReadScope:
    # Read-only: only the workspace is a tree (a workspace-write /tmp root would hold both).
    policy = SandboxPolicy(mode="read-only", cwd=ws, deny_paths=deny)
    return ReadScope.for_policy(policy, ws)


def test_in_tree_files_and_links_are_read(tree: tuple[Path, Path]) -> None:
    ws, _ = tree
    scope = _scope(ws)
    assert read_file(scope, ws / "README.md").data == b"hello\n"
    assert read_file(scope, ws / "docs" / "guide.md").data == b"hello\n"


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("out", "outside"),  # a link out of the workspace
        ("outdir/secret.txt", "outside"),  # a directory link out on the way
        ("environ", "outside"),
        ("zero", "outside"),
        ("fifo", "special"),
        ("docs", "is_directory"),
        ("missing", "missing"),
    ],
)
def test_refused(tree: tuple[Path, Path], name: str, kind: str) -> None:
    ws, _ = tree
    with pytest.raises(ReadRefused) as caught:
        read_file(_scope(ws), ws / name)
    assert caught.value.kind == kind
    assert SECRET not in caught.value.reason


def test_kernel_files_and_devices_are_refused_even_named_directly(tmp_path: Path) -> None:
    scope = ReadScope()  # anywhere: only the kind of file limits it
    for path in ("/proc/self/environ", "/proc/1/environ", "/sys/kernel/uevent_seqnum"):
        with pytest.raises(ReadRefused) as caught:
            read_file(scope, Path(path))
        assert caught.value.kind in ("special", "missing")
    for device in ("/dev/zero", "/dev/null", "/dev/urandom"):
        with pytest.raises(ReadRefused) as caught:
            read_file(scope, Path(device))
        assert caught.value.kind == "special"
    # /proc reached through a link outside every tree is refused by where it leads.
    (tmp_path / "env").symlink_to("/proc/self/environ")
    with pytest.raises(ReadRefused):
        read_file(scope, tmp_path / "env")


def test_deny_rules_apply_by_name_and_by_target(tree: tuple[Path, Path]) -> None:
    ws, _ = tree
    (ws / "private").mkdir()
    (ws / "private" / "key").write_text(SECRET)
    (ws / "alias").symlink_to("private/key")
    scope = _scope(ws, deny=(ws / "private",))
    for path in (ws / "private" / "key", ws / "alias"):
        with pytest.raises(ReadRefused) as caught:
            read_file(scope, path)
        assert caught.value.kind == "denied"


def test_reads_are_bounded(tmp_path: Path) -> None:
    big = tmp_path / "big"
    with big.open("wb") as handle:
        handle.truncate(64 * 1024 * 1024)  # sparse
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ReadRefused) as caught:
        read_file(ReadScope(), big, max_bytes=1024)
    assert caught.value.kind == "too_big"
    head = read_file(ReadScope(), big, max_bytes=1024, truncate=True)
    assert len(head.data) == 1024 and head.truncated and head.size == 64 * 1024 * 1024
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown < 16 * 1024  # KiB: nothing near the file's size was held


def test_a_link_swapped_in_after_the_check_is_not_followed(
    tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check judges the name; the open follows no symlink: a directory swapped for a
    link out between the two fails instead of reading the secret."""
    ws, outside = tree
    (ws / "sub").mkdir()
    (ws / "sub" / "secret.txt").write_text("in tree\n")
    real_open = beneath.open_beneath

    def swap_then_open(root: beneath.Root, relative: str, flags: int, mode: int = 0o666) -> int:
        os.rename(ws / "sub", ws / "sub.old")
        os.symlink(outside, ws / "sub")
        return real_open(root, relative, flags, mode)

    monkeypatch.setattr(beneath, "open_beneath", swap_then_open)
    with pytest.raises(ReadRefused) as caught:
        read_file(_scope(ws), ws / "sub" / "secret.txt")
    assert caught.value.kind == "changed"


def test_a_fifo_never_blocks_a_read(tree: tuple[Path, Path]) -> None:
    ws, _ = tree
    done = threading.Event()

    def attempt() -> None:
        with pytest.raises(ReadRefused):
            read_file(ReadScope(), ws / "fifo")
        done.set()

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(10)
    assert done.is_set()


def test_the_file_tools_go_through_the_reader(tree: tuple[Path, Path]) -> None:
    ws, _ = tree
    scope = _scope(ws)
    assert read_window(ws / "docs" / "guide.md", scope=scope).lines == ("hello",)
    for name in ("out", "environ", "zero", "fifo"):
        with pytest.raises(ToolInputError) as caught:
            read_window(ws / name, scope=scope)
        assert SECRET not in caught.value.message
    # Without a run's scope (the unscoped default) devices and /proc are still refused.
    for path in ("/dev/zero", "/proc/self/environ"):
        with pytest.raises(ToolInputError):
            read_window(Path(path))
    with pytest.raises(ToolInputError):
        list_directory(ws / "outdir", scope=scope)
    with pytest.raises(ToolInputError):
        glob_files(ws / "outdir", "*", scope=scope)
    for use_rg in (False, True):
        found = grep(GrepQuery(SECRET, ws, output_mode="content", scope=scope), use_rg=use_rg)
        assert not found.lines
        with pytest.raises(ToolInputError):
            grep(GrepQuery(SECRET, ws / "out", scope=scope), use_rg=use_rg)
        with pytest.raises(ToolInputError):
            grep(GrepQuery(SECRET, ws / "outdir", scope=scope), use_rg=use_rg)


def test_agents_md_is_read_through_the_reader(tree: tuple[Path, Path]) -> None:
    ws, outside = tree
    (ws / ".git").mkdir()
    (ws / "AGENTS.md").symlink_to("/proc/self/environ")
    (ws / "CLAUDE.md").symlink_to(outside / "secret.txt")
    os.mkfifo(ws / "GEMINI.md")
    docs = read_project_docs(ws, fallback_filenames=["CLAUDE.md", "GEMINI.md"])
    assert docs is None
    (ws / "AGENTS.override.md").symlink_to("docs/guide.md")  # in-tree: read
    assert read_project_docs(ws) == "hello"
    # A fallback name with a directory part is never looked up, whatever the caller passed.
    (ws / "AGENTS.override.md").unlink()
    absolute = str(outside / "secret.txt")
    assert read_project_docs(ws, fallback_filenames=[absolute, "../outside/secret.txt"]) is None


def test_review_reads_the_repository_through_the_reader(tree: tuple[Path, Path]) -> None:
    ws, _ = tree
    read = working_tree_reader(ws)
    assert read("README.md") == b"hello\n"
    for name in ("out", "environ", "zero", "fifo", "outdir/secret.txt"):
        assert read(name) is None


@pytest.mark.parametrize(
    "name", ["/proc/self/environ", "../secret", "docs/AGENTS.md", "", "..", "/etc/passwd"]
)
def test_fallback_filenames_are_plain_names(name: str) -> None:
    from pydantic import ValidationError

    from oiexec.api.mcp_caps import ServerDefaults, check_config
    from oiexec.config.settings import Settings

    with pytest.raises(ValidationError) as caught:
        Settings(project_doc_fallback_filenames=["CLAUDE.md", name])
    assert "project_doc_fallback_filenames" in str(caught.value)
    assert "not a plain file name" in str(caught.value)
    # An mcp-server caller gets a tool error naming the argument, with or without a ceiling.
    from mcp.server.mcpserver.exceptions import ToolError

    for sandbox in (None, "read-only"):
        with pytest.raises(ToolError, match=r"config\.project_doc_fallback_filenames"):
            check_config(
                ServerDefaults(sandbox=sandbox),
                {"project_doc_fallback_filenames": [name]},
            )
    assert Settings(project_doc_fallback_filenames=["CLAUDE.md"]).project_doc_fallback_filenames


def test_the_writers_reads_are_bounded_and_regular_only(tmp_path: Path) -> None:
    """apply_patch reads a file before changing it: /dev/zero (danger-full-access reads
    anywhere) or a FIFO fails at once instead of growing or hanging the runner."""
    from oiexec.sandbox.writer import FileWriter

    os.mkfifo(tmp_path / "fifo")
    for path in (Path("/dev/zero"), tmp_path / "fifo"):
        with pytest.raises(OSError, match="not a regular file"):
            FileWriter().read(path)
    (tmp_path / "file").write_text("x")
    assert FileWriter().read(tmp_path / "file") == b"x"


def test_review_never_holds_a_huge_file_of_the_change(tmp_path: Path) -> None:
    """The lines a change touched come from `git diff -U0`: a file above the cap counts as
    binary (no lines), so its text is never produced, nor held by the runner."""
    import subprocess

    from oiexec.review.targets import CommitTarget, UncommittedTarget, changed_lines

    repo = tmp_path / "repo"
    repo.mkdir()
    ident = ["-c", "user.name=t", "-c", "user.email=t@e", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "small.py").write_text("x = 1\n")
    (repo / "huge.txt").write_bytes(b"text line\n" * (2 * 1024 * 1024))  # 20 MiB of lines
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), *ident, "commit", "-qm", "c"], check=True)
    head = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    lines = changed_lines(repo, CommitTarget(head))
    assert lines is not None
    assert lines["small.py"] == {1}
    assert lines.get("huge.txt", set()) == set()
    (repo / "untracked.txt").write_bytes(b"more\n" * (4 * 1024 * 1024))  # 20 MiB, untracked
    uncommitted = changed_lines(repo, UncommittedTarget())
    assert uncommitted is not None and uncommitted["untracked.txt"] == set()


def test_swe_agents_submission_never_inlines_a_huge_file(tmp_path: Path) -> None:
    import subprocess

    from oiexec.tools.adapters.editor import working_tree_diff

    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "small.py").write_text("x = 1\n")
    (repo / "huge.txt").write_bytes(b"text line\n" * (1024 * 1024))  # 10 MiB of lines
    diff = working_tree_diff(repo)
    assert "+x = 1" in diff
    assert "Binary files /dev/null and b/huge.txt differ" in diff
    assert len(diff) < 64 * 1024


def test_a_root_runner_reads_only_what_its_commands_could(tmp_path: Path) -> None:
    """The sandbox drops root's capabilities: another user's 0600 file, or any file in
    another user's 0700 directory, is unreadable to commands, so to the tools as well."""
    if os.geteuid() != 0:
        pytest.skip("making another user's files needs root")
    other = 4321
    private = tmp_path / "private.txt"
    private.write_text(SECRET)
    os.chown(private, other, other)
    private.chmod(0o600)
    home = tmp_path / "home"
    home.mkdir()
    (home / "notes.txt").write_text(SECRET)
    (home / "notes.txt").chmod(0o644)
    os.chown(home, other, other)
    home.chmod(0o700)
    public = tmp_path / "public.txt"
    public.write_text("open\n")
    os.chown(public, other, other)
    public.chmod(0o644)
    tmp_path.chmod(0o755)
    scope = ReadScope()
    for path in (private, home / "notes.txt"):
        with pytest.raises(ReadRefused) as caught:
            read_file(scope, path)
        assert caught.value.kind == "denied" and "no permission" in caught.value.reason
    with pytest.raises(ToolInputError):
        list_directory(home)
    assert read_file(scope, public).data == b"open\n"


def test_grep_never_searches_a_denied_path(tree: tuple[Path, Path]) -> None:
    ws, _ = tree
    (ws / "private").mkdir()
    (ws / "private" / "key").write_text(f"{SECRET}\n")
    (ws / "visible.txt").write_text(f"{SECRET[:10]} visible\n")
    scope = _scope(ws, deny=(ws / "private",))
    for use_rg in (False, True):
        found = grep(GrepQuery(SECRET[:10], ws, output_mode="content", scope=scope), use_rg=use_rg)
        assert [line.path.name for line in found.lines] == ["visible.txt"]
