"""Guard dirs (oiexec/sandbox/guards.py) without a sandbox: how a protected name is planned,
who holds a guard, when it is removed, where the locks live, how swapped links come back.

Two `Guards` objects in one process hold locks through separate open file descriptions, so
they contend exactly as two runner processes do (flock locks belong to the description).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from oiexec.core.links import resolve
from oiexec.sandbox import guards
from oiexec.sandbox.guards import GuardError, Guards, plan, restore_links
from tests.sandbox.conftest import IS_ROOT, NOBODY

NAME = ".openinterpreter"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def private_lock_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Locks in a dir of this test only, so concurrent test runs cannot interfere."""
    locks = tmp_path / "locks"
    monkeypatch.setattr(guards, "_lock_dir_candidates", lambda: [locks])
    yield locks


def _protect(holder: Guards, ws: Path, name: str = NAME) -> guards.Protection:
    return holder.protect(ws, name, [ws], [])


def test_missing_name_gets_a_guard_held_until_close(ws: Path, private_lock_dir: Path) -> None:
    holder = Guards()
    found = _protect(holder, ws)
    assert found.mount == ws / NAME and found.guard and found.held
    assert (ws / NAME).is_dir() and list((ws / NAME).iterdir()) == []
    again = _protect(holder, ws)  # the next command of the run: the same guard, still held
    assert again.mount == ws / NAME and not again.guard
    assert len(list(private_lock_dir.iterdir())) == 1
    holder.close()
    assert not (ws / NAME).exists()
    assert list(private_lock_dir.iterdir()) == []  # nothing left behind
    holder.close()  # idempotent


def test_guard_outlives_its_maker_while_another_run_holds_it(
    ws: Path, private_lock_dir: Path
) -> None:
    first, second = Guards(), Guards()
    assert _protect(first, ws).guard
    seen = _protect(second, ws)
    assert seen.mount == ws / NAME and seen.held and not seen.guard  # saw it existing, holds it
    first.close()
    assert (ws / NAME).is_dir(), "removed while another sandbox still relied on it"
    second.close()
    assert not (ws / NAME).exists()


def test_a_users_own_empty_dir_is_never_removed(ws: Path, private_lock_dir: Path) -> None:
    (ws / NAME).mkdir()
    holder = Guards()
    found = _protect(holder, ws)
    assert found.mount == ws / NAME and not found.guard
    holder.close()
    assert (ws / NAME).is_dir()


def test_guard_with_content_or_replaced_is_left_alone(ws: Path, private_lock_dir: Path) -> None:
    holder = Guards()
    _protect(holder, ws)
    (ws / NAME / "kept").write_text("user data\n")  # written on the host meanwhile
    holder.close()
    assert (ws / NAME / "kept").read_text() == "user data\n"
    os.remove(ws / NAME / "kept")
    os.rmdir(ws / NAME)

    other = Guards()
    _protect(other, ws)
    os.rmdir(ws / NAME)
    target = ws / "elsewhere"
    target.mkdir()
    (ws / NAME).symlink_to(target)  # swapped for a link on the host: never followed
    other.close()
    assert (ws / NAME).is_symlink() and target.is_dir()


def test_guard_of_a_killed_run_is_removed_by_the_next(ws: Path, private_lock_dir: Path) -> None:
    crashed = Guards()
    _protect(crashed, ws)
    for held in crashed._held.values():  # SIGKILL: the locks go, nothing is cleaned up
        os.close(held.fd)
    crashed._held.clear()
    assert (ws / NAME).is_dir()
    later = Guards()
    assert not _protect(later, ws).guard  # it exists already...
    later.close()
    assert not (ws / NAME).exists()  # ... and the lock file still said it was a guard


def test_guard_in_a_read_only_dir_we_own(ws: Path, private_lock_dir: Path) -> None:
    # A command could `chmod u+w` the workspace it owns and then create the name.
    ws.chmod(0o555)
    try:
        holder = Guards()
        assert _protect(holder, ws).guard and (ws / NAME).is_dir()
        holder.close()
        assert not (ws / NAME).exists()
        assert stat.S_IMODE(ws.stat().st_mode) == 0o555
    finally:
        ws.chmod(0o755)


@pytest.mark.skipif(not IS_ROOT, reason="needs a directory owned by another user")
def test_no_guard_where_the_sandbox_cannot_create(ws: Path) -> None:
    os.chown(ws, NOBODY, NOBODY)
    ws.chmod(0o755)
    assert plan(ws, NAME, [ws], []).mount is None
    os.setxattr(ws, "system.posix_acl_access", _acl_granting_write(os.geteuid()))
    assert plan(ws, NAME, [ws], []).guard  # an ACL may grant what the bits do not


def _acl_granting_write(uid: int) -> bytes:
    # posix_acl_xattr: version 2, then (tag, perm, id) entries: user::, user:uid, group::,
    # mask, other.
    entries = [(0x01, 7, 0xFFFFFFFF), (0x02, 7, uid), (0x04, 5, 0xFFFFFFFF)]
    entries += [(0x10, 7, 0xFFFFFFFF), (0x20, 5, 0xFFFFFFFF)]
    out = (2).to_bytes(4, "little")
    for tag, perm, ident in entries:
        out += tag.to_bytes(2, "little") + perm.to_bytes(2, "little") + ident.to_bytes(4, "little")
    return out


def test_symlinked_names_are_planned_at_their_target(ws: Path, tmp_path: Path) -> None:
    real = ws / "real"
    real.mkdir()
    (ws / NAME).symlink_to("real")
    found = plan(ws, NAME, [ws], [])
    assert found.mount == real and found.held and not found.guard
    assert found.links == ((ws / NAME, "real"),)

    (ws / ".agents").symlink_to("sub/cfg/deeper")  # dangling, through a link
    (ws / "sub").symlink_to("real")
    found = plan(ws, ".agents", [ws], [])
    assert found.mount == real / "cfg" and found.guard  # the first missing component
    assert [p for p, _ in found.links] == [ws / ".agents", ws / "sub"]

    outside = tmp_path / "outside" / "x"
    (ws / ".codex").symlink_to(outside)
    found = plan(ws, ".codex", [ws], [])
    assert found.mount is None and found.links  # unwritable there, but the link is watched

    private = tmp_path / "private"
    (ws / ".git").symlink_to(private / "repo")
    assert plan(ws, ".git", [ws], [private]).mount is None  # resolves to the private copy
    # A workspace inside a private root (under /tmp) is bound on top of it: guarded.
    assert plan(ws, NAME, [ws], [tmp_path]).mount == real
    (ws / "real" / "more").symlink_to("../deeper")
    (ws / ".agents").unlink()
    (ws / ".agents").symlink_to("real/more")
    assert plan(ws, ".agents", [ws], [tmp_path]).mount == ws / "deeper"


def test_symlink_loops_and_files_on_the_way_plan_nothing(ws: Path) -> None:
    (ws / NAME).symlink_to(NAME)
    found = plan(ws, NAME, [ws], [])
    assert found.mount is None and found.links
    (ws / "file").write_text("")
    (ws / ".agents").symlink_to("file/x")
    assert plan(ws, ".agents", [ws], []).mount is None
    assert resolve(ws / NAME)[2] is True


def test_dangling_link_guard_is_made_and_removed(ws: Path, private_lock_dir: Path) -> None:
    (ws / NAME).symlink_to("cfg")
    holder = Guards()
    found = _protect(holder, ws)
    assert found.mount == ws / "cfg" and found.guard and (ws / "cfg").is_dir()
    holder.close()
    assert not (ws / "cfg").exists() and (ws / NAME).is_symlink()


def test_swapped_links_are_restored(ws: Path) -> None:
    (ws / "real").mkdir()
    link = ws / NAME
    link.symlink_to("real")
    watched = [(link, "real")]
    assert restore_links(watched) == []
    link.unlink()
    link.mkdir()
    (link / "config.toml").write_text('sandbox_mode = "danger-full-access"\n')
    [note] = restore_links(watched)
    assert "restored" in note and os.readlink(link) == "real"
    link.unlink()
    link.symlink_to("elsewhere")
    assert restore_links(watched) and os.readlink(link) == "real"


def test_lock_dir_is_private_and_outside_the_bound_roots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted, inside, good = tmp_path / "planted", tmp_path / "ws" / "locks", tmp_path / "good"
    planted.symlink_to(tmp_path)
    monkeypatch.setattr(guards, "_lock_dir_candidates", lambda: [planted, inside, good])
    assert guards.lock_dir([tmp_path / "ws"]) == good
    assert stat.S_IMODE(good.stat().st_mode) == 0o700
    good.chmod(0o755)
    assert guards.lock_dir([tmp_path / "ws"]) == good  # tightened again
    assert stat.S_IMODE(good.stat().st_mode) == 0o700
    with pytest.raises(GuardError):
        guards.lock_dir([tmp_path])
    if IS_ROOT:
        os.chown(good, NOBODY, NOBODY)  # someone else's: they could drop our locks
        with pytest.raises(GuardError):
            guards.lock_dir([tmp_path / "ws"])


def test_default_lock_dirs_are_per_uid_and_fixed() -> None:
    uid = os.geteuid()
    candidates = [str(p) for p in guards._lock_dir_candidates()]
    assert all(str(uid) in c for c in candidates)
    assert f"/tmp/oiexec-guards-{uid}" in candidates
    assert not any("XDG" in c for c in candidates)


def test_links_are_restored_to_what_the_run_first_saw(ws: Path, private_lock_dir: Path) -> None:
    (ws / "real").mkdir()
    (ws / NAME).symlink_to("real")
    holder = Guards()
    first = _protect(holder, ws)
    (ws / NAME).unlink()
    (ws / NAME).symlink_to("planted")  # swapped by a command still running
    second = _protect(holder, ws)  # the next command starts before the first one's cleanup
    assert second.links == first.links == ((ws / NAME, "real"),)
    restore_links(second.links)
    assert os.readlink(ws / NAME) == "real"
    holder.close()
