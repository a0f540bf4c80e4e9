"""`sandbox.beneath` and the writers over it: IO confined beneath a root that follows no
symlink, so a command swapping a directory for a link while the runner writes cannot send a
write outside; and protected names that match however a file system folds them."""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pytest

from oiexec.core.context import ToolContext
from oiexec.core.errors import ToolInputError
from oiexec.core.policy import SandboxMode, SandboxPolicy
from oiexec.sandbox import beneath
from oiexec.sandbox.writer import PolicyWriter
from oiexec.tools.apply_patch import ApplyPatchError, apply_patch
from oiexec.tools.framework import Runtime
from oiexec.tools.fs import write_file
from oiexec.tools.patch_tool import run_patch
from oiexec.tools.style import Style
from tests.conftest import MakeToolContext

_LIBC = ctypes.CDLL(None, use_errno=True)
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> None:
    _LIBC.renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)


@dataclass
class Tree:
    """ws/d (a dir), ws/l -> out (a dir outside), ws/d/inner -> out, ws/lf -> out/target."""

    ws: Path
    out: Path
    tool_context: MakeToolContext

    def policy(self, mode: SandboxMode = "workspace-write") -> SandboxPolicy:
        return SandboxPolicy(
            mode=mode, cwd=self.ws, exclude_slash_tmp=True, exclude_tmpdir_env_var=True
        )

    def ctx(self, mode: SandboxMode = "workspace-write") -> ToolContext:
        return self.tool_context(self.ws, policy=self.policy(mode))

    def outside(self) -> list[str]:
        return sorted(os.listdir(self.out))


@pytest.fixture
def tree(tmp_path: Path, tool_context: MakeToolContext) -> Tree:
    base = Path(os.path.realpath(tmp_path))
    ws, out = base / "ws", base / "out"
    (ws / "d").mkdir(parents=True)
    out.mkdir()
    (ws / "l").symlink_to(out)
    (ws / "d" / "inner").symlink_to(out)
    (ws / "lf").symlink_to(out / "target")
    return Tree(ws, out, tool_context)


@pytest.fixture(params=["openat2", "walk"])
def impl(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test once with openat2 and once with the component walk used without it."""
    if request.param == "openat2" and not beneath.openat2_available():
        pytest.skip("this kernel has no openat2")
    if request.param == "walk":
        monkeypatch.setattr(beneath, "_openat2", False)
    return str(request.param)


def _patch(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch", ""])


# --- the primitives ------------------------------------------------------------------------


@pytest.mark.parametrize("relative", ["l/x", "d/inner/x", "l/a/b/c", "lf", "d/inner"])
def test_a_symlink_at_any_component_is_refused(impl: str, tree: Tree, relative: str) -> None:
    with pytest.raises(OSError) as info:
        beneath.write_beneath(tree.ws, relative, b"no")
    assert info.value.errno == errno.ELOOP and beneath.changed_under_us(info.value)
    with pytest.raises(OSError, match="symbolic links"):
        os.close(beneath.open_beneath(tree.ws, relative, os.O_RDONLY))
    with pytest.raises(OSError, match="symbolic links"):
        beneath.makedirs_beneath(tree.ws, f"{relative}/sub")
    with pytest.raises(OSError, match="symbolic links"):
        beneath.rename_beneath(tree.ws, "d", f"{relative}/moved")
    assert tree.outside() == []
    assert (tree.ws / "d").is_dir()


@pytest.mark.parametrize("relative", ["d/../../out/x", "../out/x", "/etc/x", "d/.."])
def test_leaving_the_root_is_refused(impl: str, tree: Tree, relative: str) -> None:
    with pytest.raises(OSError) as info:
        beneath.write_beneath(tree.ws, relative, b"no")
    assert info.value.errno == errno.EXDEV and beneath.changed_under_us(info.value)
    assert tree.outside() == []


def test_a_root_reached_through_a_symlink_is_refused(impl: str, tree: Tree) -> None:
    with pytest.raises(OSError, match="symbolic links"):
        beneath.open_root(tree.ws / "l")
    with pytest.raises(OSError, match="absolute"):
        beneath.open_root("relative/root")


def test_writes_deletes_and_moves_work(impl: str, tree: Tree) -> None:
    ws = tree.ws
    beneath.write_beneath(ws, "new/deep/a.txt", b"one")
    assert (ws / "new" / "deep" / "a.txt").read_bytes() == b"one"
    target = ws / "d" / "kept.txt"
    target.write_bytes(b"old")
    target.chmod(0o640)
    os.link(target, ws / "hard.txt")
    inode = target.stat().st_ino
    # With another hard link the file is rewritten in place, so the link sees the change.
    beneath.write_beneath(ws, "d/kept.txt", b"in place")
    assert (ws / "hard.txt").read_bytes() == b"in place" and target.stat().st_ino == inode
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    # Without one it is replaced atomically by a temp file, keeping its permission bits.
    (ws / "hard.txt").unlink()
    beneath.write_beneath(ws, "d/kept.txt", b"atomic")
    assert target.read_bytes() == b"atomic" and target.stat().st_ino != inode
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in (ws / "d").iterdir()) == ["inner", "kept.txt"]  # no temp
    fd = beneath.open_beneath(ws, "d/kept.txt", os.O_RDONLY)
    with os.fdopen(fd, "rb") as handle:
        assert handle.read() == b"atomic"
    beneath.rename_beneath(ws, "d/kept.txt", "moved/here.txt")
    assert (ws / "moved" / "here.txt").read_bytes() == b"atomic" and not target.exists()
    beneath.unlink_beneath(ws, "moved/here.txt")
    beneath.unlink_beneath(ws, "l")  # the link itself, not what it points at
    assert not (ws / "moved" / "here.txt").exists() and not (ws / "l").is_symlink()
    beneath.makedirs_beneath(ws, "new/deep/er")
    assert (ws / "new" / "deep" / "er").is_dir()


def test_a_fifo_at_the_target_fails_instead_of_hanging(impl: str, tree: Tree) -> None:
    os.mkfifo(tree.ws / "fifo")
    with pytest.raises(OSError) as info:
        beneath.write_beneath(tree.ws, "fifo", b"x")
    assert info.value.errno == errno.ENXIO


def test_without_openat2_the_walk_takes_over(tree: Tree, monkeypatch: pytest.MonkeyPatch) -> None:
    def enosys(*_args: object) -> int:
        raise OSError(errno.ENOSYS, "no openat2")

    monkeypatch.setattr(beneath, "_openat2", None)
    monkeypatch.setattr(beneath, "_raw_openat2", enosys)
    assert not beneath.openat2_available()
    beneath.write_beneath(tree.ws, "d/x", b"ok")
    with pytest.raises(OSError, match="symbolic links"):
        beneath.write_beneath(tree.ws, "l/x", b"no")
    assert (tree.ws / "d" / "x").read_bytes() == b"ok" and tree.outside() == []


def test_locate_takes_the_deepest_root(tree: Tree) -> None:
    roots = [tree.ws, tree.ws / "d"]
    assert beneath.locate(roots, tree.ws / "d" / "x") == (tree.ws / "d", PurePosixPath("x"))
    assert beneath.locate(roots, tree.ws / "y" / ".." / "z") == (tree.ws, PurePosixPath("z"))
    assert beneath.locate(roots, tree.out / "x") is None
    policy = tree.policy()
    assert beneath.writable_root_of(policy, tree.ws / "a" / "b") == (
        tree.ws,
        PurePosixPath("a/b"),
    )


# --- the race ------------------------------------------------------------------------------


@pytest.fixture
def swapper(tree: Tree) -> Iterator[Callable[[], None]]:
    """A thread exchanging ws/d and ws/l (the link out) as fast as it can; call the fixture's
    value to stop it (teardown stops it too)."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            _exchange(tree.ws / "d", tree.ws / "l")

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()

    def halt() -> None:
        stop.set()
        thread.join()

    try:
        yield halt
    finally:
        halt()


def test_a_racing_swap_never_lets_a_write_out(
    impl: str, tree: Tree, swapper: Callable[[], None]
) -> None:
    """Through the tools' real entry points: the apply_patch tool and the fs write tool with
    the runtime's guard. (Before the fix, about 2% of such writes landed in `out`.)"""
    ctx = tree.ctx()
    guard = Runtime(style=Style()).can_write(ctx)
    written = 0
    for i in range(400):
        if i % 2:
            outcome = run_patch(_patch(f"*** Add File: d/p{i}", "+x"), ctx)
            written += outcome.ok
            continue
        try:
            write_file(tree.ws / "d" / f"w{i}", "x", can_write=guard)
            written += 1
        except ToolInputError as exc:
            assert exc.kind in ("denied", "changed"), exc.message
    swapper()
    assert tree.outside() == []
    [real_dir] = [p for p in (tree.ws / "d", tree.ws / "l") if not p.is_symlink()]
    assert written > 0
    # Every reported success is in the workspace's real directory (whatever it is named now).
    assert written == len([n for n in os.listdir(real_dir) if n[0] in "pw"])


def _swap_after_check(tree: Tree, name: str, *, at: int = 1) -> PolicyWriter:
    """A writer that swaps ws/d for the link right after its `at`-th check of `name` (the
    last one before the IO): the worst timing for the runner."""
    checks = 0

    class SwapAfterCheck(PolicyWriter):
        def resolve(self, path: Path, *, link_itself: bool = False) -> tuple[Path, str | None]:
            nonlocal checks
            found = super().resolve(path, link_itself=link_itself)
            checks += path.name == name
            if path.name == name and checks == at:
                _exchange(tree.ws / "d", tree.ws / "l")
            return found

    return SwapAfterCheck(tree.policy())


def test_a_swap_after_the_check_is_reported_and_rolled_back(impl: str, tree: Tree) -> None:
    text = _patch("*** Add File: ok.txt", "+fine", "*** Add File: d/x", "+no")
    with pytest.raises(ApplyPatchError) as info:
        apply_patch(text, tree.ws, _swap_after_check(tree, "x"))
    message = info.value.message
    assert "d/x changed while being written (a symlink appeared on its way)" in message
    assert message.endswith("No files were changed.") and info.value.kind == "io"
    assert tree.outside() == [] and not (tree.ws / "ok.txt").exists()


def test_the_fs_tools_report_a_swap_too(impl: str, tree: Tree) -> None:
    with pytest.raises(ToolInputError, match="changed while being written") as info:
        # write_file checks the path up front, then again as it writes.
        write_file(tree.ws / "d" / "x", "no", can_write=_swap_after_check(tree, "x", at=2))
    assert info.value.kind == "changed" and tree.outside() == []


def test_a_link_caught_mid_replacement_is_looked_at_again(
    tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    """realpath fails (EINVAL from readlink) when a link becomes a directory under it."""
    real = os.path.realpath
    failures = iter([True, True])

    def flaky(path: str | os.PathLike[str]) -> str:
        if next(failures, False):
            raise OSError(errno.EINVAL, "Invalid argument")
        return real(path)

    monkeypatch.setattr(os.path, "realpath", flaky)
    apply_patch(_patch("*** Add File: d/x", "+x"), tree.ws, PolicyWriter(tree.policy()))
    assert (tree.ws / "d" / "x").read_text() == "x\n"


# --- what still works ----------------------------------------------------------------------


def test_patches_through_the_policy_writer(impl: str, tree: Tree) -> None:
    ws = tree.ws
    (ws / "real").mkdir()
    (ws / "alias").symlink_to(ws / "real")  # inside -> inside: written through, as before
    (ws / "file.txt").write_text("a\n")
    (ws / "file.txt").chmod(0o751)
    os.link(ws / "file.txt", ws / "twin.txt")
    (ws / "gone.txt").write_text("bye\n")
    (ws / "src.txt").write_text("s\n")
    (ws / "link.txt").symlink_to(ws / "src.txt")
    apply_patch(
        _patch(
            "*** Add File: alias/new.txt",
            "+new",
            "*** Update File: file.txt",
            "-a",
            "+b",
            "*** Delete File: gone.txt",
            "*** Update File: link.txt",
            "*** Move to: moved/dest.txt",
        ),
        ws,
        PolicyWriter(tree.policy()),
    )
    assert (ws / "real" / "new.txt").read_text() == "new\n" and (ws / "alias").is_symlink()
    assert (ws / "twin.txt").read_text() == "b\n"  # in place: the hard link sees it
    assert stat.S_IMODE((ws / "file.txt").stat().st_mode) == 0o751
    assert not (ws / "gone.txt").exists()
    assert (ws / "moved" / "dest.txt").read_text() == "s\n"
    assert not (ws / "link.txt").is_symlink() and (ws / "src.txt").exists()


def test_full_access_writes_directly_and_read_only_refuses(tree: Tree) -> None:
    apply_patch(
        _patch("*** Add File: l/x", "+x"), tree.ws, PolicyWriter(tree.policy("danger-full-access"))
    )
    assert tree.outside() == ["x"]
    with pytest.raises(ApplyPatchError, match="read-only sandbox"):
        apply_patch(
            _patch("*** Add File: y", "+y"), tree.ws, PolicyWriter(tree.policy("read-only"))
        )


# --- protected names -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        ".GIT/config",
        ".Git/hooks/x",
        ".openInterpreter/config.toml",
        ".git./x",
        ".git. /x",
        ".g\u200dit/hooks/pre-commit",
        ".\u200bgit/config",
        ".CODEX/x",
        ".Agents/x",
        "GIT~1/config",
        ".git::$INDEX_ALLOCATION/x",
    ],
)
def test_protected_names_are_matched_as_folding_file_systems_do(tree: Tree, path: str) -> None:
    outcome = run_patch(_patch(f"*** Add File: {path}", "+x"), tree.ctx())
    assert not outcome.ok
    assert outcome.output.startswith("apply_patch rejected: cannot add")
    assert "is read-only inside the sandbox (it is ." in outcome.output
    assert "on case-insensitive file systems)" in outcome.output
    assert sorted(os.listdir(tree.ws)) == ["d", "l", "lf"]


@pytest.mark.parametrize("path", [".github/workflows/ci.yml", ".gitignore", "git/x", ".agent"])
def test_names_that_only_look_alike_are_writable(tree: Tree, path: str) -> None:
    outcome = run_patch(_patch(f"*** Add File: {path}", "+x"), tree.ctx())
    assert outcome.ok, outcome.output
    assert (tree.ws / path).read_text() == "x\n"
