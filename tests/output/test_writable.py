"""The writability trial made when a report is opened (output/writable): it leaves nothing
behind, and it refuses what the write at the end would fail on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from oiexec.core.errors import UsageError
from oiexec.output.reportfile import ReportDir, ReportTarget
from tests.sandbox.conftest import (  # noqa: F401  (the fixture lets `nobody` run this Python)
    IS_ROOT,
    REPO_ROOT,
    _unprivileged_can_run_python,
    as_user,
)


@pytest.mark.parametrize("unnamed", [True, False], ids=["O_TMPFILE", "named-probe"])
def test_the_trial_leaves_nothing_in_the_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unnamed: bool
) -> None:
    if not unnamed:
        monkeypatch.delattr(os, "O_TMPFILE", raising=False)  # as on macOS or an old kernel
    with ReportTarget.open(tmp_path / "r" / "junit.xml", "--junit"):
        assert list((tmp_path / "r").iterdir()) == []
    ReportDir.open(tmp_path / "out").close()
    assert list((tmp_path / "out").iterdir()) == []


def _open_as_nobody(path: Path, append: bool) -> subprocess.CompletedProcess[str]:
    code = (
        "import sys\nfrom oiexec.core.errors import UsageError\n"
        "from oiexec.output.reportfile import ReportTarget\n"
        "try:\n    ReportTarget.open(sys.argv[1], '--junit', append=sys.argv[2] == '1').close()\n"
        "except UsageError as exc:\n    print(exc.message)\n"
    )
    argv = as_user([sys.executable, "-c", code, str(path), "1" if append else "0"])
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, check=True)


@pytest.mark.skipif(not IS_ROOT, reason="needs a file owned by another user")
def test_another_users_file_in_a_sticky_directory_and_an_unwritable_append(
    tmp_path: Path,
) -> None:
    """Run as nobody: in a sticky directory (as /tmp) root's file cannot be renamed over, and
    a file nobody may not write cannot be appended to; a missing name there can be made."""
    sticky = Path("/var/tmp") / f"oi-sticky-{os.getpid()}"
    sticky.mkdir(mode=0o1777)
    try:
        sticky.chmod(0o1777)
        taken = sticky / "junit.xml"
        taken.write_text("root's\n")
        taken.chmod(0o644)
        said = _open_as_nobody(taken, append=False).stdout
        assert f"belongs to another user (uid 0) in the sticky directory {sticky}" in said
        assert "cannot append to it: Permission denied" in _open_as_nobody(taken, True).stdout
        assert _open_as_nobody(sticky / "new.xml", append=False).stdout == ""
        assert taken.read_text() == "root's\n"
    finally:
        for entry in sticky.iterdir():
            entry.unlink()
        sticky.rmdir()


def test_root_is_refused_by_nothing_but_the_mount(tmp_path: Path) -> None:
    """A directory without write permission: refused for a user, never for root."""
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    locked.chmod(0o555)
    try:
        if IS_ROOT:
            ReportTarget.open(locked / "j.xml", "--junit").close()
        else:
            with pytest.raises(UsageError, match="Permission denied"):
                ReportTarget.open(locked / "j.xml", "--junit")
    finally:
        locked.chmod(0o755)
