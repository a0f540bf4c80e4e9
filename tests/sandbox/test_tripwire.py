"""The tripwire (Landlock) and the runner's own git calls: every file git runs programs from
or is redirected by is put back to the run's one baseline, overlapping commands cannot launder
each other's writes, restores follow no planted symlink, a deleted `.git` is reported with the
history it held, and the runner's `--diff` never runs a planted fsmonitor or filter. The
command-level tests run for both backends (under bwrap the writes fail outright)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from oiexec.core.policy import SandboxPolicy
from oiexec.sandbox.tripwire import Tripwire
from tests.sandbox.conftest import BACKENDS, Box, snapshot_tree
from tests.sandbox.support import commit_all, run_exec
from tests.support.model_server import ModelServer, call, reply, tool_outputs

_FSMONITOR = '[core]\\n\\tfsmonitor = "touch {mark}"\\n'


# --- through `interpreter exec` ----------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_planted_git_config_never_runs_in_the_runner(
    box: Box, model_server: ModelServer, backend: str
) -> None:
    """`.git/commondir` to a copy with fsmonitor and a filter, and `~/.gitconfig` (HOME is
    in a writable root here) with the same: `--diff` snapshots must run none of them."""
    commit_all(box.ws)
    marks = {name: box.outside / name for name in ("fsmon", "filter", "home-fsmon", "home-filt")}
    script = "; ".join(
        [
            "cp -r .git evil",
            f"printf '{_FSMONITOR.format(mark=marks['fsmon'])}' >> evil/config",
            f'printf \'[filter "ev"]\\n\\tclean = "touch {marks["filter"]}; cat"\\n\''
            " >> evil/config",
            'echo "$PWD/evil" > .git/commondir',
            "printf '* filter=ev\\n*.txt filter=home\\n' > .gitattributes",
            f"printf '{_FSMONITOR.format(mark=marks['home-fsmon'])}' >> \"$HOME/.gitconfig\"",
            f'printf \'[filter "home"]\\n\\tclean = "touch {marks["home-filt"]}; cat"\\n\''
            ' >> "$HOME/.gitconfig"',
            "echo changed >> README; echo new > new.txt; true",
        ]
    )
    model_server.enqueue(reply(tool_calls=[call("exec_command", {"cmd": script})]), reply("done"))
    diff = box.root / "run.diff"
    result = run_exec(box, model_server, "workspace-write", backend, ["--diff", str(diff)])
    assert result["code"] == 0, result["stderr"]
    assert [m.name for m in marks.values() if m.exists()] == []
    assert not (box.ws / ".git" / "commondir").exists()
    assert b"+changed" in diff.read_bytes()


@pytest.mark.parametrize("backend", BACKENDS)
def test_overlapping_commands_cannot_launder_config(
    box: Box, model_server: ModelServer, backend: str
) -> None:
    """A background session plants fsmonitor in `.git/config`; a second command starts after
    the write and ends after the first: restoring to its own "before" would put the planted
    config back. One baseline per run means it never comes back."""
    mark = box.outside / "laundered"
    config = (box.ws / ".git" / "config").read_bytes()
    plant = f"sleep 0.2; printf '{_FSMONITOR.format(mark=mark)}' >> .git/config; sleep 1.5"
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": plant, "yield_time_ms": 600})]),
        reply(tool_calls=[call("exec_command", {"cmd": "sleep 3", "yield_time_ms": 250})]),
        reply(tool_calls=[call("write_stdin", {"session_id": 1000, "yield_time_ms": 5000})]),
        reply(tool_calls=[call("write_stdin", {"session_id": 1001, "yield_time_ms": 8000})]),
        reply("done"),
    )
    diff = box.root / "run.diff"
    result = run_exec(box, model_server, "workspace-write", backend, ["--diff", str(diff)])
    assert result["code"] == 0, result["stderr"]
    outputs = list(tool_outputs(model_server.bodies[-1]).values())
    assert all("Process exited" in o for o in outputs[2:]), outputs
    assert (box.ws / ".git" / "config").read_bytes() == config
    assert not mark.exists()


@pytest.mark.parametrize("backend", BACKENDS)
def test_deleted_git_dir_is_reported_with_its_history(
    box: Box, model_server: ModelServer, backend: str
) -> None:
    head = commit_all(box.ws)
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": "rm -rf .git; echo rc=$?"})]),
        reply("done"),
    )
    result = run_exec(box, model_server, "workspace-write", backend)
    assert result["code"] == 0, result["stderr"]
    [output] = tool_outputs(model_server.bodies[-1]).values()
    if backend == "bwrap":
        assert (box.ws / ".git" / "HEAD").exists()
        return
    assert ".git was deleted or moved away by the command" in output, output
    assert head[:12] in output and "cannot protect git history" in output


# --- through `interpreter sandbox` -------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_deleted_git_dir_is_reported_by_the_cli(box: Box, backend: str) -> None:
    head = commit_all(box.ws)
    script = "rm -rf .git; mkdir .git; echo x > .git/config"
    result = box.run("workspace-write", script, backend=backend)
    if backend == "bwrap":
        assert (box.ws / ".git" / "HEAD").exists()
        return
    assert ".git was deleted or moved away by the command" in result.stderr
    assert head[:12] in result.stderr
    assert not (box.ws / ".git").exists(), "a replacement .git must not stay"


@pytest.mark.parametrize("backend", BACKENDS)
def test_restores_follow_no_planted_symlink(box: Box, backend: str) -> None:
    target = box.outside / "target"
    target.write_text("keep\n")
    if box.who != "root":
        os.chown(target, *(box.outside.stat()[4:6]))
    hooks_before = snapshot_tree(box.ws / ".git" / "hooks")
    config_before = (box.ws / ".git" / "config").read_bytes()
    script = (
        f"mv .git/hooks .git/hooks-old; ln -s {box.outside} .git/hooks; "
        f"ln -sf {target} .git/config; true"
    )
    box.run("workspace-write", script, backend=backend)
    assert sorted(p.name for p in box.outside.iterdir()) == ["target"]
    assert target.read_text() == "keep\n"
    assert not (box.ws / ".git" / "hooks").is_symlink()
    assert snapshot_tree(box.ws / ".git" / "hooks") == hooks_before
    assert not (box.ws / ".git" / "config").is_symlink()
    assert (box.ws / ".git" / "config").read_bytes() == config_before


@pytest.mark.parametrize("backend", BACKENDS)
def test_redirects_and_new_git_files_are_removed(box: Box, backend: str) -> None:
    before = snapshot_tree(box.ws / ".git")
    script = (
        "echo /tmp > .git/objects/info/alternates; echo ../x > .git/commondir; "
        "echo x > .git/config.worktree; mkdir -p .git/info; "
        "echo '* filter=x' > .git/info/attributes; "
        "mkdir -p .git/modules/s/hooks; echo ref: refs/heads/m > .git/modules/s/HEAD; "
        "echo x > .git/modules/s/hooks/post-checkout; echo '[core]' > .git/modules/s/config; true"
    )
    result = box.run("workspace-write", script, backend=backend)
    assert snapshot_tree(box.ws / ".git") == before
    if backend == "landlock":
        assert "commondir was created by the command" in result.stderr


# --- the Tripwire itself -----------------------------------------------------------------


def _policy(ws: Path) -> SandboxPolicy:
    return SandboxPolicy(
        mode="workspace-write", cwd=ws, exclude_slash_tmp=True, exclude_tmpdir_env_var=True
    )


def _repo(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


def test_one_baseline_for_the_whole_run(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    config = (ws / ".git" / "config").read_bytes()
    wire = Tripwire(_policy(ws))
    for attempt in range(3):
        (ws / ".git" / "config").write_text(f"[core]\n\tfsmonitor = evil{attempt}\n")
        notes = wire.restore()
        assert any("config was modified" in n for n in notes), notes
        assert (ws / ".git" / "config").read_bytes() == config
    assert wire.restore() == []


def test_submodule_and_worktree_git_dirs_are_watched(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    sub = ws / ".git" / "modules" / "lib" / "inner"
    (sub / "hooks").mkdir(parents=True)
    (sub / "HEAD").write_text("ref: refs/heads/main\n")
    (sub / "config").write_text("[core]\n\tbare = false\n")
    wt = ws / ".git" / "worktrees" / "w"
    wt.mkdir(parents=True)
    (wt / "HEAD").write_text("ref: refs/heads/w\n")
    (wt / "commondir").write_text("../..\n")
    wire = Tripwire(_policy(ws))
    (sub / "config").write_text("[core]\n\tfsmonitor = evil\n")
    (sub / "hooks" / "post-checkout").write_text("evil\n")
    (wt / "commondir").write_text("/tmp/evil\n")
    notes = wire.restore()
    assert (sub / "config").read_text() == "[core]\n\tbare = false\n"
    assert not (sub / "hooks" / "post-checkout").exists()
    assert (wt / "commondir").read_text() == "../..\n"
    assert len(notes) == 3, notes


def test_git_file_target_and_its_common_dir_are_watched(tmp_path: Path) -> None:
    main = _repo(tmp_path)
    (main / "f").write_text("x")
    subprocess.run(["git", "-C", str(main), "add", "f"], check=True)
    git = ["git", "-C", str(main), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    linked = tmp_path / "linked"
    subprocess.run([*git, "worktree", "add", "-q", str(linked)], check=True)
    hook = main / ".git" / "hooks" / "pre-commit"
    wire = Tripwire(_policy(linked))
    hook.write_text("evil\n")
    gitdir = next((main / ".git" / "worktrees").iterdir())
    (gitdir / "commondir").write_text("/tmp/evil\n")
    wire.restore()
    assert not hook.exists()
    assert (gitdir / "commondir").read_text() == "../..\n"


def test_a_planted_fifo_does_not_hang_the_restore(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    wire = Tripwire(_policy(ws))
    fifo = ws / ".git" / "hooks" / "pre-commit"
    os.mkfifo(fifo)
    notes = wire.restore()
    assert not fifo.exists()
    assert any("pre-commit was created" in n for n in notes)


def test_restored_files_keep_their_mode(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    hook = ws / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)
    wire = Tripwire(_policy(ws))
    hook.unlink()
    wire.restore()
    assert hook.stat().st_mode & 0o777 == 0o755
    assert hook.read_text() == "#!/bin/sh\nexit 0\n"


def test_a_new_repository_in_place_of_the_old_is_reported(tmp_path: Path) -> None:
    """Even where a new `.git` gets the old one's inode (file systems without birth times),
    HEAD going unborn after a commit is reported as lost history."""
    ws = _repo(tmp_path)
    (ws / "f").write_text("x")
    git = ["git", "-C", str(ws), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "add", "f"], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    wire = Tripwire(_policy(ws))
    for name in os.listdir(ws / ".git"):  # emptied in place: same directory, same inode
        target = ws / ".git" / name
        subprocess.run(["rm", "-rf", str(target)], check=True)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    notes = wire.restore()
    assert any("the commit HEAD was on" in n and "cannot protect git history" in n for n in notes)
    # Said once per run, not after every command.
    assert not any("cannot protect git history" in n for n in wire.restore())
