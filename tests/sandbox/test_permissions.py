"""Permission profiles (`default_permissions`, `[permissions.<name>]`) through a full
`interpreter exec`, as root and as `nobody`: a denied file or directory cannot be read by the
model's commands (directly, through a symlink, a hard link, /proc/self/root or Python), a
read-only path inside the workspace cannot be written (by shell or by patch), and what the
profile allows still works. A backend or harness that cannot enforce a rule refuses the run
with exit 3 before any command; a rule is never dropped."""

from __future__ import annotations

import errno
import json
import os
import socket
from pathlib import Path
from typing import Any, Literal

import pytest

from oiexec.core.errors import ExitCode
from tests.sandbox.conftest import (
    IS_ROOT,
    PYTHON,
    Box,
    exec_backend_args,
    unprivileged_ids,
)
from tests.support.model_server import ModelServer, apply_patch_call, call, reply, tool_outputs

SECRET = "TOPSECRET-4c1d"


def _own(box: Box, *paths: Path) -> None:
    if box.who == "root" or not IS_ROOT:
        return
    uid, gid = unprivileged_ids()
    for path in paths:
        os.lchown(path, uid, gid)


def _profile(box: Box, body: str) -> None:
    home = box.root / "home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(body)
    _own(box, home, home / "config.toml")


def _secrets(box: Box) -> tuple[Path, Path]:
    """A readable secret file and a directory holding one, both outside the workspace."""
    secret = box.outside / "secret.txt"
    secret.write_text(SECRET + "\n")
    vault = box.outside / "vault"
    vault.mkdir()
    (vault / "key.txt").write_text(SECRET + "-vault\n")
    for path in (secret, vault / "key.txt"):
        path.chmod(0o644)
    vault.chmod(0o755)
    _own(box, secret, vault, vault / "key.txt")
    return secret, vault


def _exec(
    box: Box, server: ModelServer, backend: str | None, *extra: str, harness: str = "native"
) -> dict[str, Any]:
    wire: Literal["chat", "responses"] = "chat" if harness == "qwen-code" else "responses"
    proc = box.interpreter(
        ["exec", "--json", *exec_backend_args(backend), *server.config_args(wire_api=wire),
         "-c", f'harness="{harness}"', *extra, "go"]
    )  # fmt: skip
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return {"code": proc.returncode, "events": events, "stderr": proc.stderr}


def _config(secret: Path, vault: Path, *, deny: bool = True) -> str:
    rules = f'"{secret}" = "deny"\n"{vault}" = "deny"\n' if deny else ""
    return (
        'default_permissions = "ci"\n'
        "[permissions.ci]\n"
        'extends = ":workspace"\n'
        "[permissions.ci.filesystem]\n"
        f"{rules}"
        '":workspace_roots" = { "." = "write", "docs" = "read" }\n'
    )


def _script(secret: Path, vault: Path) -> str:
    read_py = f"print(open('{secret}').read())"
    return "; ".join(
        [
            f"cat {secret}",
            f"cat {vault}/key.txt",
            f"ls {vault}",
            f"ln -s {secret} via-symlink; cat via-symlink",
            f"ln {secret} via-hardlink; cat via-hardlink",
            f"ln {vault}/key.txt key-hardlink; cat key-hardlink",
            f"cat /proc/self/root{secret}",
            f'{PYTHON} -c "{read_py}"',
            f"cp -r {vault} copied-vault; cat copied-vault/key.txt",
            "echo changed > docs/guide.txt",
            "echo new > docs/new.txt",
            "echo fine > allowed.txt",
            "true",
        ]
    )


def _docs(box: Box) -> Path:
    docs = box.ws / "docs"
    docs.mkdir()
    (docs / "guide.txt").write_text("original\n")
    _own(box, docs, docs / "guide.txt")
    return docs


_PATCH_DOCS = (
    "*** Begin Patch\n*** Update File: docs/guide.txt\n@@\n-original\n+patched\n*** End Patch\n"
)


def test_denied_paths_stay_unreadable_and_read_only_paths_unwritten(
    box: Box, model_server: ModelServer
) -> None:
    secret, vault = _secrets(box)
    docs = _docs(box)
    _profile(box, _config(secret, vault))
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": _script(secret, vault)})]),
        reply(tool_calls=[apply_patch_call(_PATCH_DOCS)]),
        reply("tried"),
    )
    result = _exec(box, model_server, "bwrap")
    assert result["code"] == 0, result["stderr"]
    [output, patch_output] = list(tool_outputs(model_server.bodies[-1]).values())
    assert SECRET not in json.dumps(result["events"])
    assert SECRET not in output
    # The directory shows nothing: not even its file names.
    assert "key.txt" not in output.splitlines()
    assert f"cannot open directory '{vault}'" in output
    assert (docs / "guide.txt").read_text() == "original\n"
    assert not (docs / "new.txt").exists()
    assert "read-only in permission profile `ci`" in patch_output
    # What the profile allows still happens, and the files themselves are untouched.
    assert (box.ws / "allowed.txt").read_text() == "fine\n"
    assert secret.read_text() == SECRET + "\n"
    assert (vault / "key.txt").read_text() == SECRET + "-vault\n"


def test_without_the_deny_rules_the_same_commands_read_the_secret(
    box: Box, model_server: ModelServer
) -> None:
    # The control: the escape script above is able to read the files when nothing denies them.
    secret, vault = _secrets(box)
    _docs(box)
    _profile(box, _config(secret, vault, deny=False))
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": _script(secret, vault)})]),
        reply("read"),
    )
    result = _exec(box, model_server, "bwrap")
    assert result["code"] == 0, result["stderr"]
    [output] = list(tool_outputs(model_server.bodies[-1]).values())
    assert output.count(SECRET) >= 6


def test_landlock_refuses_a_deny_rule_with_exit_3(box: Box, model_server: ModelServer) -> None:
    secret, vault = _secrets(box)
    _profile(box, _config(secret, vault))
    result = _exec(box, model_server, "landlock")
    assert result["code"] == ExitCode.CONFIG, result["stderr"]
    assert f"the deny rule for {secret} cannot be enforced: Landlock" in result["stderr"]
    assert model_server.model_requests == []


def test_a_harness_reading_files_itself_refuses_a_deny_rule(
    box: Box, model_server: ModelServer
) -> None:
    secret, vault = _secrets(box)
    _profile(box, _config(secret, vault))
    result = _exec(box, model_server, "bwrap", harness="qwen-code")
    assert result["code"] == ExitCode.CONFIG, result["stderr"]
    assert "reads files in the runner process (read_file" in result["stderr"]
    assert 'harness = "native"' in result["stderr"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('default_permissions = "ci"\n', "profile `ci` is not defined"),
        (
            'default_permissions = "ci"\nsandbox_mode = "workspace-write"\n'
            '[permissions.ci]\nextends = ":workspace"\n',
            "Codex would use sandbox_mode and drop the profile's rules",
        ),
        (
            'default_permissions = "ci"\n[permissions.ci.filesystem]\n"/etc" = "deny"\n',
            'rule `permissions.ci.filesystem.":root"`',
        ),
        (
            'default_permissions = "ci"\n[permissions.ci]\nextends = ":workspace"\n'
            '[permissions.ci.filesystem]\n":workspace_roots" = { "**/*.env" = "deny" }\n',
            "glob patterns",
        ),
        (
            'default_permissions = "ci"\n[permissions.ci]\nextends = ":workspace"\n'
            '[permissions.ci.network]\ndomains = { "example.com" = "allow" }\n',
            "permissions.ci.network.domains",
        ),
    ],
)
def test_profiles_the_sandbox_cannot_enforce_are_config_errors(
    box: Box, model_server: ModelServer, body: str, message: str
) -> None:
    _profile(box, body)
    result = _exec(box, model_server, "bwrap")
    assert result["code"] == ExitCode.CONFIG, result["stderr"]
    assert message in result["stderr"]
    assert "Traceback" not in result["stderr"]


def test_a_denied_file_with_another_hard_link_is_refused(
    box: Box, model_server: ModelServer
) -> None:
    secret, vault = _secrets(box)
    os.link(secret, box.outside / "second-name.txt")
    _profile(box, _config(secret, vault))
    result = _exec(box, model_server, "bwrap")
    assert result["code"] == ExitCode.CONFIG, result["stderr"]
    assert "has 2 hard links" in result["stderr"]


def test_a_read_only_profile_keeps_the_workspace_unwritten(
    box: Box, model_server: ModelServer
) -> None:
    _profile(box, 'default_permissions = ":read-only"\n')
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": "echo x > written.txt; cat README"})]),
        reply("done"),
    )
    result = _exec(box, model_server, "bwrap")
    assert result["code"] == 0, result["stderr"]
    assert not (box.ws / "written.txt").exists()
    [output] = list(tool_outputs(model_server.bodies[-1]).values())
    assert "hello" in output


def test_a_misspelt_profile_table_is_an_error_not_a_warning(
    box: Box, model_server: ModelServer
) -> None:
    _profile(
        box,
        'default_permissions = "ci"\n[permissions.ci]\nextends = ":workspace"\n'
        '[permissions.ci.filesytem]\n"/etc/shadow" = "deny"\n',
    )
    result = _exec(box, model_server, "bwrap")
    assert result["code"] == ExitCode.CONFIG, result["stderr"]
    assert "unknown key `permissions.ci.filesytem` in permission profile" in result["stderr"]


def test_an_unselected_profile_says_it_has_no_effect(box: Box, model_server: ModelServer) -> None:
    _profile(
        box,
        '[permissions.spare]\nextends = ":workspace"\n'
        '[permissions.spare.filesystem]\n"/etc/hostname" = "deny"\n',
    )
    model_server.enqueue(reply("done"))
    result = _exec(box, model_server, "bwrap")
    assert result["code"] == 0, result["stderr"]
    assert (
        'permissions.spare.filesystem."/etc/hostname": accepted for compatibility'
        in (result["stderr"])
    )


def test_a_resumed_run_keeps_the_profile(box: Box, model_server: ModelServer) -> None:
    secret, vault = _secrets(box)
    _profile(box, _config(secret, vault))
    model_server.enqueue(
        reply("first"),
        reply(tool_calls=[call("exec_command", {"cmd": f"cat {secret}; echo done"})]),
        reply("second"),
    )
    first = _exec(box, model_server, "bwrap")
    assert first["code"] == 0, first["stderr"]
    proc = box.interpreter(
        ["exec", "--json", *exec_backend_args("bwrap"), *model_server.config_args(),
         "-c", 'harness="native"', "resume", "--last", "again"]
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    [output] = list(tool_outputs(model_server.bodies[-1]).values())
    assert "done" in output
    assert SECRET not in output


def _denied_in_subdir(box: Box) -> Path:
    """`sub/secret.txt` in the workspace, denied by the profile; returns `sub`."""
    sub = box.ws / "sub"
    sub.mkdir()
    (sub / "secret.txt").write_text(SECRET + "\n")
    _own(box, sub, sub / "secret.txt")
    _profile(
        box,
        'default_permissions = "ci"\n[permissions.ci]\nextends = ":workspace"\n'
        '[permissions.ci.filesystem]\n":workspace_roots" = { "sub/secret.txt" = "deny" }\n',
    )
    return sub


#: Swaps two directories in one step (renameat2 RENAME_EXCHANGE): run in a loop in the
#: background, it would let bwrap mask a decoy between planning a mount and making it.
_EXCHANGE = (
    "import ctypes; libc = ctypes.CDLL(None, use_errno=True); "
    "rc = libc.renameat2(-100, b'sub', -100, b'decoy', 2); "
    "print('exchange', 'refused' if rc else 'done', ctypes.get_errno())"
)


def test_a_directory_above_a_denied_file_cannot_be_moved(
    box: Box, model_server: ModelServer
) -> None:
    # Every directory between the workspace and a denied path is a mount point in the
    # sandbox, which the kernel will not rename: the mask cannot be moved away from the file.
    sub = _denied_in_subdir(box)
    decoy = box.ws / "decoy"
    decoy.mkdir()
    _own(box, decoy)
    script = (
        f'mv sub moved; {PYTHON} -c "{_EXCHANGE}"; '
        "cat sub/secret.txt moved/secret.txt decoy/secret.txt; true"
    )
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": script})]),
        reply(tool_calls=[call("exec_command", {"cmd": "cat sub/secret.txt; ls"})]),
        reply("done"),
    )
    result = _exec(box, model_server, "bwrap")
    assert result["code"] == 0, result["stderr"]
    [moving, after] = list(tool_outputs(model_server.bodies[-1]).values())
    assert "cannot move 'sub' to 'moved': Device or resource busy" in moving
    assert f"exchange refused {errno.EBUSY}" in moving
    assert all(SECRET not in body for body in map(json.dumps, model_server.bodies))
    assert "moved" not in after.split()
    assert (sub / "secret.txt").read_text() == SECRET + "\n"


def test_a_denied_file_moved_from_outside_the_sandbox_stops_the_run(
    box: Box, model_server: ModelServer
) -> None:
    # A hook runs outside the sandbox, so it can rename what commands cannot; the next
    # command, planned for the old path, is refused instead of finding the file unmasked.
    _denied_in_subdir(box)
    hooks = {"PostToolUse": [{"hooks": [{"type": "command", "command": "mv sub moved"}]}]}
    (box.root / "home" / "hooks.json").write_text(json.dumps({"hooks": hooks}))
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": "true"})]),
        reply(tool_calls=[call("exec_command", {"cmd": "cat moved/secret.txt"})]),
        reply("done"),
    )
    result = _exec(box, model_server, "bwrap")
    assert result["code"] == ExitCode.SANDBOX_UNAVAILABLE, result["stderr"]
    assert (box.ws / "moved" / "secret.txt").exists()
    assert all(SECRET not in body for body in map(json.dumps, model_server.bodies))
    assert "was moved, removed or replaced during the run" in json.dumps(result["events"])


@pytest.mark.parametrize("backend", ["bwrap", "landlock"])
def test_a_profile_can_write_elsewhere_and_keep_the_workdir_read_only(
    box: Box, model_server: ModelServer, backend: str
) -> None:
    # Writable roots alone need no mount over a path, so Landlock enforces them too.
    _profile(
        box,
        'default_permissions = "out"\n[permissions.out]\nextends = ":read-only"\n'
        f'[permissions.out.filesystem]\n"{box.outside}" = "write"\n',
    )
    script = f"echo no > in-workdir.txt; echo yes > {box.outside}/out.txt; true"
    model_server.enqueue(reply(tool_calls=[call("exec_command", {"cmd": script})]), reply("done"))
    result = _exec(box, model_server, backend)
    assert result["code"] == 0, result["stderr"]
    assert not (box.ws / "in-workdir.txt").exists()
    assert (box.outside / "out.txt").read_text() == "yes\n"


@pytest.mark.parametrize("enabled", [True, False])
def test_the_profile_s_network_switch_opens_or_closes_the_network(
    box: Box, model_server: ModelServer, tcp_listener: socket.socket, enabled: bool
) -> None:
    port = tcp_listener.getsockname()[1]
    _profile(
        box,
        'default_permissions = "net"\n[permissions.net]\nextends = ":workspace"\n'
        f"[permissions.net.network]\nenabled = {'true' if enabled else 'false'}\n",
    )
    connect = f"import socket; socket.create_connection(('127.0.0.1', {port}), 2)"
    script = f'{PYTHON} -c "{connect}" && echo CONNECTED; true'
    model_server.enqueue(reply(tool_calls=[call("exec_command", {"cmd": script})]), reply("done"))
    result = _exec(box, model_server, "bwrap")
    assert result["code"] == 0, result["stderr"]
    [output] = list(tool_outputs(model_server.bodies[-1]).values())
    assert ("CONNECTED" in output) is enabled
