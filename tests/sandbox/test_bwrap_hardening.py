"""Escapes past the bwrap mounts: host sysctls through a fresh /proc, writable mounts, host
Unix sockets with the network on, dangling or swapped protected symlinks, guard dirs removed
under a running sandbox (within one run and across runner processes); and `sandbox doctor`
claiming only what a probe confirms.

Each escape runs through `interpreter sandbox` and through `interpreter exec` with a scripted
model, as root and as nobody (the `box` fixture), in each backend and mode where it applies.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from oiexec.core.policy import SandboxPolicy
from oiexec.sandbox import profiles, seccomp
from oiexec.sandbox.bwrap import BwrapFeatures
from oiexec.sandbox.diagnosis import Decision
from oiexec.sandbox.preflight import Preflight
from tests.sandbox.conftest import (
    BACKENDS,
    IS_ROOT,
    PYTHON,
    RUNNER_PYTHON,
    SANDBOXED_MODES,
    Box,
    backend_args,
)
from tests.support.model_server import ModelServer, call, reply, tool_outputs

DOMAINNAME = Path("/proc/sys/kernel/domainname")
PROTECTED = (".openinterpreter", ".agents", ".codex")

# Runs inside the sandbox; prints one JSON object. Same-value writes cannot change the host
# even when they succeed; only the domainname gets a marker (and is restored by the test).
PROBE = r"""
import json, os, socket, sys
out = {}
def attempt(name, fn):
    try:
        fn()
        out[name] = "ok"
    except OSError as exc:
        out[name] = f"errno {exc.errno}"
def rewrite(path, value=None):
    def go():
        data = value if value is not None else open(path).read()
        with open(path, "w") as f:
            f.write(data)
    return go
for arg in sys.argv[1:]:
    kind, _, value = arg.partition("=")
    if kind == "domainname":
        attempt(kind, rewrite("/proc/sys/kernel/domainname", value))
    elif kind == "sysctls":
        for rel in ("kernel/core_pattern", "kernel/modprobe", "net/ipv4/ip_forward",
                    "kernel/printk", "vm/overcommit_memory"):
            if os.path.exists("/proc/sys/" + rel):
                attempt("sysctl:" + rel, rewrite("/proc/sys/" + rel))
    elif kind == "proc_writable":
        found = []
        for top, dirs, files in os.walk("/proc"):
            if top == "/proc":
                dirs[:] = [d for d in dirs if not d.isdigit() and d not in ("self", "thread-self")]
            for name in files:
                path = os.path.join(top, name)
                try:
                    os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
                    found.append(path)
                except OSError:
                    pass
        out[kind] = found
    elif kind == "writable_mounts":
        found = []
        for line in open("/proc/self/mountinfo"):
            point = line.split()[4].encode().decode("unicode_escape")
            try:
                if not os.statvfs(point).f_flag & os.ST_RDONLY:
                    found.append(point)
            except OSError:
                pass
        out[kind] = sorted(set(found))
    elif kind == "unix_path":
        attempt(arg, lambda: socket.socket(socket.AF_UNIX).connect(value))
    elif kind == "unix_abstract":
        attempt(arg, lambda: socket.socket(socket.AF_UNIX).connect("\0" + value))
    elif kind == "tcp":
        attempt(arg, lambda: socket.create_connection(("127.0.0.1", int(value)), timeout=2))
    elif kind == "kmsg":
        attempt(kind, lambda: os.close(os.open("/dev/kmsg", os.O_WRONLY)))
    elif kind == "caps":
        for line in open("/proc/self/status"):
            if line.startswith("CapEff:"):
                out[kind] = int(line.split()[1], 16)
    elif kind == "pid":
        out[arg] = os.path.exists(f"/proc/{value}")
print("PROBE:" + json.dumps(out))
"""


def _probe_file(box: Box) -> str:
    path = box.outside / "probe.py"  # not under /tmp: that is private in workspace-write
    if not path.exists():
        path.write_text(PROBE)
        path.chmod(0o644)
    return str(path)


def _parse(output: str) -> dict[str, Any]:
    line = next((ln for ln in output.splitlines() if ln.startswith("PROBE:")), None)
    assert line is not None, f"the probe did not run:\n{output}"
    result: dict[str, Any] = json.loads(line.removeprefix("PROBE:"))
    return result


def _probe(
    box: Box, mode: str, backend: str, *args: str, network: bool = False, faults: str = ""
) -> dict[str, Any]:
    extra = ["--network"] if network else []
    argv = ["-s", mode, "-C", str(box.ws), *extra, "--", PYTHON, _probe_file(box), *args]
    result = box.cli(argv, backend=backend, env={"OI_SANDBOX_FAULTS": faults} if faults else {})
    return _parse(result.stdout + result.stderr)


#: The host's value before any test here ran (tests run in parallel: read it once).
_HOST_DOMAINNAME = DOMAINNAME.read_text()


@contextlib.contextmanager
def _domainname_guard() -> Iterator[str]:
    """A marker for the probe to write. If it reached the host, the host's domainname is
    restored and the test fails (a marker of a parallel test is that test's business)."""
    marker = f"oi-escape-{uuid.uuid4().hex[:8]}"
    try:
        yield marker
    finally:
        if DOMAINNAME.read_text().strip() == marker:
            DOMAINNAME.write_text(_HOST_DOMAINNAME)
            pytest.fail(f"the host's domainname was changed from inside to {marker!r}")


def _blocked(result: str) -> bool:
    return result != "ok"


# -- 1. sysctls and /proc ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("backend", "faults"), [("bwrap", ""), ("bwrap", "no-proc"), ("landlock", "")]
)
@pytest.mark.parametrize("mode", SANDBOXED_MODES)
def test_host_sysctls_are_read_only(box: Box, backend: str, mode: str, faults: str) -> None:
    """Fresh /proc (re-bound read-only parts), the host's /proc under no-proc, Landlock."""
    with _domainname_guard() as marker:
        result = _probe(box, mode, backend, f"domainname={marker}", "sysctls", faults=faults)
    writes = {k: v for k, v in result.items() if k.startswith(("sysctl:", "domainname"))}
    assert len(writes) >= 3 and all(_blocked(v) for v in writes.values()), writes


def test_the_probe_can_write_sysctls_without_a_sandbox(box: Box) -> None:
    """The control: unconfined, root writes the same values back (so the probe is sound)."""
    result = _probe(box, "danger-full-access", "bwrap", "sysctls")
    writes = [v for k, v in result.items() if k.startswith("sysctl:")]
    assert writes and all((v == "ok") == (box.who == "root") for v in writes), result


@pytest.mark.parametrize("mode", SANDBOXED_MODES)
def test_nothing_host_wide_in_the_fresh_proc_is_writable(box: Box, mode: str) -> None:
    result = _probe(box, mode, "bwrap", "proc_writable")
    # PSI triggers are tied to the open file and allowed to anyone; the rest must be closed.
    leftover = [p for p in result["proc_writable"] if not p.startswith("/proc/pressure/")]
    assert leftover == []


@pytest.mark.parametrize("mode", SANDBOXED_MODES)
@pytest.mark.parametrize("faults", ["", "no-proc"])
def test_only_the_writable_roots_are_writable_mounts(box: Box, mode: str, faults: str) -> None:
    """/sys with its submounts (cgroups, securityfs, ...) and every other host mount are seen
    read-only; only the private /dev and /proc, the workspace and the private /tmp are not."""
    result = _probe(box, mode, "bwrap", "writable_mounts", faults=faults)
    allowed = {"/dev", "/dev/pts", "/dev/shm", "/dev/mqueue"}
    allowed |= {f"/dev/{n}" for n in ("null", "zero", "full", "random", "urandom", "tty")}
    if not faults:
        allowed.add("/proc")
    if mode == "workspace-write":
        allowed |= {str(box.ws), "/tmp"}
    extra = set(result["writable_mounts"]) - allowed
    assert not extra, f"writable inside the sandbox: {sorted(extra)}"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", SANDBOXED_MODES)
def test_exec_cannot_write_host_sysctls(
    box: Box, model_server: ModelServer, backend: str, mode: str
) -> None:
    with _domainname_guard() as marker:
        script = f"{PYTHON} {_probe_file(box)} domainname={marker} sysctls"
        model_server.enqueue(
            reply(tool_calls=[call("exec_command", {"cmd": script, "yield_time_ms": 20000})]),
            reply("done"),
        )
        result = _exec(box, model_server, mode, backend)
    assert result.returncode == 0, result.stderr
    [output] = tool_outputs(model_server.bodies[-1]).values()
    writes = _parse(output)
    assert len(writes) >= 3 and all(_blocked(v) for v in writes.values()), writes


# -- exec with the scripted model ----------------------------------------------------------------


def _exec(
    box: Box, server: ModelServer, mode: str, backend: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    return box.exec(server.config_args(), mode, backend, *extra, timeout=180)


# -- 2. guard dirs: within a run and across runner processes ----------------------------------

_PLANT = (
    "for i in $(seq 100); do mkdir -p .openinterpreter 2>/dev/null; "
    "if echo 'sandbox_mode = \"danger-full-access\"' > .openinterpreter/config.toml "
    "2>/dev/null; then echo PLANTED; break; fi; sleep 0.05; done"
)


def _session_id(output: str) -> int:
    found = re.search(r"session ID (\d+)", output)
    assert found, output
    return int(found.group(1))


def _poll(index: int, yield_ms: int) -> Any:
    """A scripted step polling the session of the `index`-th command output so far."""

    def step(body: dict[str, Any]) -> Any:
        outputs = list(tool_outputs(body).values())
        args = {"session_id": _session_id(outputs[index]), "chars": "", "yield_time_ms": yield_ms}
        return reply(tool_calls=[call("write_stdin", args)])

    return step


def test_guard_is_not_removed_under_a_background_command(
    box: Box, model_server: ModelServer
) -> None:
    """A (background) makes the guards; B starts while they exist; A ends and is reaped; B
    then tries to plant `.openinterpreter/config.toml` for as long as 5 s."""
    first = "sleep 1; touch a_done"
    second = f"while [ ! -e a_done ]; do sleep 0.05; done; {_PLANT}"
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": first, "yield_time_ms": 250})]),
        reply(tool_calls=[call("exec_command", {"cmd": second, "yield_time_ms": 250})]),
        _poll(0, 5000),  # A ends: its cleanup ran here
        _poll(1, 30000),  # B's attempts
        reply("done"),
    )
    result = _exec(box, model_server, "workspace-write", "bwrap")
    assert result.returncode == 0, result.stderr
    outputs = list(tool_outputs(model_server.bodies[-1]).values())
    assert "Process exited with code 0" in outputs[2]  # A really ended before B's attempts
    assert "PLANTED" not in outputs[3]
    assert not (box.ws / ".openinterpreter" / "config.toml").exists()
    for name in PROTECTED:  # and no guard left behind after the run
        assert not (box.ws / name).exists(), name


def _start(box: Box, script: str) -> subprocess.Popen[str]:
    argv = box.as_me(
        [RUNNER_PYTHON, "-m", "oiexec.cli.sandbox_cmd", "-s", "workspace-write",
         *backend_args("bwrap"), "-C", str(box.ws), "--", "/bin/sh", "-c", script]
    )  # fmt: skip
    # Its own process group: killing the runner alone would leave bwrap and the command.
    return subprocess.Popen(
        argv, cwd=box.ws, env=box.env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True,
    )  # fmt: skip


def _wait_for(path: Path, proc: subprocess.Popen[str], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, proc.communicate()[0]
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def test_guard_stays_for_the_longer_of_two_runner_processes(box: Box) -> None:
    """Run 1 makes the guards; run 2 (another process) starts while they exist; run 1 ends;
    run 2 then tries to plant `.openinterpreter/config.toml` for as long as 5 s."""
    shorter = _start(box, "touch p1_up; while [ ! -e p2_up ]; do sleep 0.02; done")
    longer: subprocess.Popen[str] | None = None
    try:
        _wait_for(box.ws / "p1_up", shorter)
        longer = _start(
            box, f"touch p2_up; while [ ! -e p1_gone ]; do sleep 0.02; done; sleep 0.3; {_PLANT}"
        )
        _wait_for(box.ws / "p2_up", longer)
        assert shorter.communicate(timeout=30)[0] == ""
        assert shorter.returncode == 0
        # The first run has ended; the second still holds the guard it saw existing.
        assert (box.ws / ".openinterpreter").is_dir()
        (box.ws / "p1_gone").touch()
        output = longer.communicate(timeout=60)[0]
    finally:
        for proc in (shorter, longer):
            if proc is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
    assert "PLANTED" not in output
    assert not (box.ws / ".openinterpreter" / "config.toml").exists()
    for name in PROTECTED:
        assert not (box.ws / name).exists(), name


# -- 3. dangling and swapped protected symlinks -------------------------------------------------


def _dangling_links(box: Box) -> str:
    """Links the script below attacks; returns the script."""
    (box.ws / ".openinterpreter").symlink_to("cfg")  # dangling, inside the workspace
    (box.ws / ".agents").symlink_to("via/agents")  # dangling through another link
    (box.ws / "real").mkdir()
    (box.ws / "via").symlink_to("real")
    (box.ws / ".codex").symlink_to(box.outside / "codex")  # dangling, outside every root
    if box.who != "root":
        for path in (".openinterpreter", ".agents", "real", "via", ".codex"):
            os.lchown(box.ws / path, *(os.stat(box.ws)[4:6]))
    return "; ".join(
        [
            "mkdir cfg; echo x > cfg/config.toml",
            "mkdir -p .openinterpreter; echo x > .openinterpreter/config.toml",
            "mkdir real/agents; echo x > real/agents/config.toml",
            "mkdir .codex; mkdir -p " + str(box.outside / "codex"),
            # Swap the links themselves (they cannot be mounted on): restored afterwards.
            "rm .openinterpreter && mkdir .openinterpreter && echo x > .openinterpreter/y",
            "rm via && mkdir -p via/agents && echo x > via/agents/config.toml",
            "true",
        ]
    )


def _assert_links_held(box: Box) -> None:
    assert os.readlink(box.ws / ".openinterpreter") == "cfg"
    assert os.readlink(box.ws / "via") == "real"
    assert os.readlink(box.ws / ".agents") == "via/agents"
    assert not (box.ws / "cfg").exists(), "guard left behind (or planted)"
    assert not (box.ws / "real" / "agents").exists()
    assert not (box.outside / "codex").exists()


def test_dangling_protected_symlinks_cannot_be_filled(box: Box) -> None:
    script = _dangling_links(box)
    result = box.run("workspace-write", script, backend="bwrap")
    assert result.returncode == 0, result.stderr
    assert "restored" in result.stderr
    _assert_links_held(box)


def test_exec_dangling_protected_symlinks_cannot_be_filled(
    box: Box, model_server: ModelServer
) -> None:
    script = _dangling_links(box)
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": script, "yield_time_ms": 20000})]),
        reply("done"),
    )
    result = _exec(box, model_server, "workspace-write", "bwrap")
    assert result.returncode == 0, result.stderr
    [output] = tool_outputs(model_server.bodies[-1]).values()
    assert "restored" in output  # the model is told
    _assert_links_held(box)


# -- 4. host Unix sockets ------------------------------------------------------------------------


@pytest.fixture
def host_socket() -> Iterator[Path]:
    """A listening socket where a session bus would be (`/run/user/*/bus`, masked by policy).
    Needs root to create under /run/user; the suite runs as root in CI."""
    if not IS_ROOT:
        pytest.skip("creating a socket under /run/user needs root")
    base = Path("/run/user", str(4_000_000_000 + os.getpid() % 1000))
    base.mkdir(parents=True, exist_ok=True)
    path = base / "bus"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    sock.listen(4)
    sock.settimeout(0.3)
    path.chmod(0o777)
    try:
        yield path
    finally:
        sock.close()
        path.unlink(missing_ok=True)
        base.rmdir()


@pytest.mark.parametrize("faults", ["", "no-netns"])
def test_host_sockets_are_masked_with_the_network_on(
    box: Box, host_socket: Path, faults: str
) -> None:
    result = _probe(
        box, "workspace-write", "bwrap", f"unix_path={host_socket}", network=True, faults=faults
    )
    assert _blocked(result[f"unix_path={host_socket}"]), result
    control = _probe(box, "danger-full-access", "bwrap", f"unix_path={host_socket}")
    assert control[f"unix_path={host_socket}"] == "ok"  # the listener works


def test_exec_host_sockets_are_masked_with_the_network_on(
    box: Box, model_server: ModelServer, host_socket: Path
) -> None:
    script = f"{PYTHON} {_probe_file(box)} unix_path={host_socket}"
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": script, "yield_time_ms": 20000})]),
        reply("done"),
    )
    network = ["-c", "sandbox_workspace_write.network_access=true"]
    result = _exec(box, model_server, "workspace-write", "bwrap", *network)
    assert result.returncode == 0, result.stderr
    [output] = tool_outputs(model_server.bodies[-1]).values()
    assert _blocked(_parse(output)[f"unix_path={host_socket}"])


# -- 5. the doctor claims what a probe confirms ---------------------------------------------------


@pytest.fixture
def listeners(box: Box) -> Iterator[dict[str, str]]:
    """Host listeners a sandboxed command must not reach with the network off."""
    tag = f"oi-host-{uuid.uuid4().hex[:8]}"
    path = box.outside / "host.sock"
    by_path, abstract = socket.socket(socket.AF_UNIX), socket.socket(socket.AF_UNIX)
    by_path.bind(str(path))
    path.chmod(0o777)  # reachable for a runner that is nobody, too
    abstract.bind(f"\0{tag}")
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    for sock in (by_path, abstract, tcp):
        sock.listen(4)
    try:
        yield {"unix_path": str(path), "unix_abstract": tag, "tcp": str(tcp.getsockname()[1])}
    finally:
        for sock in (by_path, abstract, tcp):
            sock.close()


CONFIGS = [("bwrap", ""), ("bwrap", "no-netns"), ("bwrap", "no-proc"), ("landlock", "")]


@pytest.mark.parametrize(("backend", "faults"), CONFIGS)
def test_doctor_claims_only_what_holds(
    box: Box, listeners: dict[str, str], backend: str, faults: str
) -> None:
    env = {"OI_SANDBOX_FAULTS": faults} if faults else {}
    report = json.loads(box.cli(["doctor", "--json"], backend=backend, env=env).stdout)
    assert report["backend"] == backend
    claims: dict[str, bool] = report["enforced"]
    probes = [f"{k}={v}" for k, v in listeners.items()]
    with _domainname_guard() as marker:
        result = _probe(
            box, "workspace-write", backend, *probes, f"domainname={marker}", "kmsg", "caps",
            f"pid={os.getpid()}", faults=faults,
        )  # fmt: skip
    unix = all(_blocked(result[p]) for p in probes if p.startswith("unix"))
    tcp = _blocked(result[probes[2]])
    # Exact for the network claims (over-claiming was the bug, under-claiming hides progress).
    assert claims["unix_sockets"] == unix, (claims, result)
    assert claims["network"] == (unix and tcp), (claims, result)
    assert not claims["sysctl_readonly"] or _blocked(result["domainname"])
    assert not claims["device_nodes"] or _blocked(result["kmsg"])
    assert not claims["capabilities_dropped"] or result["caps"] == 0
    assert claims["pid_isolation"] == (not result[f"pid={os.getpid()}"])
    missing = report["guarantees_missing"]
    assert all(isinstance(s, str) and s for s in missing)
    assert bool(missing) == (backend == "landlock" or bool(faults))
    if faults == "no-netns":
        assert any("no network namespace" in s for s in missing)


def test_doctor_text_lists_what_is_missing(box: Box) -> None:
    result = box.cli(["doctor"], backend="bwrap", env={"OI_SANDBOX_FAULTS": "no-netns"})
    assert result.returncode == 0
    assert "missing:  no network namespace" in result.stdout  # the report is the output
    assert "not enforced: " in result.stdout and "own_loopback" in result.stdout


def _decision(backend: str, dropped: tuple[str, ...] = (), **kw: Any) -> Decision:
    policy = SandboxPolicy(mode="workspace-write", cwd=Path("/"), **kw)
    pre = Preflight(platform="linux", bwrap=BwrapFeatures("/usr/bin/bwrap", dropped))
    pre.landlock_abi = 7
    return Decision(backend, policy, pre)


def test_enforced_is_a_flat_dict_of_bools() -> None:
    for decision in (_decision("bwrap"), _decision("landlock"), _decision("none")):
        claims = decision.enforced()
        assert claims and all(isinstance(v, bool) for v in claims.values())
    assert not any(_decision("none").enforced().values())
    on = _decision("bwrap", network_access=True).enforced()
    assert not on["network"] and not on["unix_sockets"] and on["host_sockets_masked"]
    assert not _decision("landlock", network_access=True).enforced()["host_sockets_masked"]


def test_network_claims_follow_the_real_filter() -> None:
    """A filter that lets AF_UNIX through (as the old one did) must not be called closed."""
    from oiexec.sandbox.diagnosis import _families_closed, run_bpf

    arch = seccomp.native_arch()
    table = profiles.load("linux/seccomp.toml")["arch"][arch]
    nr, audit = int(table["syscalls"]["socket"]), int(table["audit_arch"])

    def insn(code: int, jt: int, jf: int, k: int) -> bytes:
        return code.to_bytes(2, "little") + bytes([jt, jf]) + k.to_bytes(4, "little")

    old = b"".join(
        [
            insn(0x20, 0, 0, 4), insn(0x15, 1, 0, audit), insn(0x06, 0, 0, 0x80000000),
            insn(0x20, 0, 0, 0), insn(0x15, 0, 3, nr), insn(0x20, 0, 0, 16),
            insn(0x15, 1, 0, 1), insn(0x06, 0, 0, 0x00050001), insn(0x06, 0, 0, 0x7FFF0000),
        ]
    )  # fmt: skip
    assert _families_closed(old, arch) == {1: False, 2: True}
    assert run_bpf(insn(0xFF, 0, 0, 0), b"\0" * 64) is None  # unknown: claim nothing
    current = seccomp.build_filter(network_disabled=True, read_only=False, deny_chown=False)
    assert _families_closed(current, arch)[2] is True
