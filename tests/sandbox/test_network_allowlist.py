"""The network allowlist through the real CLI and the real sandbox (issue 26).

With `network_access = true` and `allowed_domains = ["localhost"]`, the scripted model's
command reaches an HTTP server of the test through the runner's proxy by the allowed name
(plain HTTP and a CONNECT tunnel), is refused (403, with a body that says why) through
`127.0.0.1` and the host's name, and cannot connect without the proxy; the denials are on
stderr, in the run log and counted in the closing line. Landlock refuses the allowlist.
"""

from __future__ import annotations

import http.server
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sandbox.conftest import PYTHON, Box
from tests.support.model_server import ModelServer, call, reply, tool_outputs

ALLOW_LOCALHOST = [
    "-c",
    "sandbox_workspace_write.network_access=true",
    "-c",
    'sandbox_workspace_write.allowed_domains=["localhost"]',
]

_PROBE = r"""
import http.client, json, os, socket, sys, urllib.error, urllib.request

port, host = int(sys.argv[1]), sys.argv[2]
out = {"proxy": os.environ.get("HTTP_PROXY"), "no_proxy": os.environ.get("NO_PROXY")}


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return [answer.status, answer.read().decode()]
    except urllib.error.HTTPError as exc:
        return [exc.code, exc.read().decode()]
    except Exception as exc:
        return ["error", repr(exc)]


out["localhost"] = get(f"http://localhost:{port}/a")
out["ip"] = get(f"http://127.0.0.1:{port}/b")
out["hostname"] = get(f"http://{host}:{port}/c")
proxy_host, proxy_port = os.environ["HTTPS_PROXY"].removeprefix("http://").rsplit(":", 1)
tunnel = http.client.HTTPConnection(proxy_host, int(proxy_port), timeout=10)
tunnel.set_tunnel("localhost", port)
tunnel.request("GET", "/d")
answer = tunnel.getresponse()
out["tunnel"] = [answer.status, answer.read().decode()]
try:
    socket.create_connection(("127.0.0.1", port), timeout=5).close()
    out["direct"] = "connected"
except OSError as exc:
    out["direct"] = type(exc).__name__
mounts = open("/proc/self/mountinfo").read().split()
out["socket_dirs"] = sorted({m for m in mounts if "/oiexec-net-" in m})
print("PROBE:" + json.dumps(out))
"""


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"hello {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def web() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_commands_reach_allowed_names_only(box: Box, model_server: ModelServer, web: int) -> None:
    probe = box.outside / "probe.py"  # not under /tmp: bwrap gives commands a private one
    probe.write_text(_PROBE)
    probe.chmod(0o644)
    hostname = socket.gethostname()
    command = f"{PYTHON} {probe} {web} {hostname}"
    model_server.enqueue(
        reply(tool_calls=[call("exec_command", {"cmd": command, "yield_time_ms": 60_000})]),
        reply("done"),
    )
    result = box.exec(
        model_server.config_args(), "workspace-write", "bwrap", *ALLOW_LOCALHOST, timeout=180
    )
    assert result.returncode == 0, result.stderr
    [output] = list(tool_outputs(model_server.bodies[-1]).values())
    line = next((ln for ln in output.splitlines() if ln.startswith("PROBE:")), None)
    assert line is not None, output
    found = json.loads(line.removeprefix("PROBE:"))
    assert found["proxy"].startswith("http://127.0.0.1:")
    assert found["no_proxy"] is None
    assert found["localhost"] == [200, "hello /a"]
    assert found["tunnel"] == [200, "hello /d"]
    for denied, target in (("ip", f"127.0.0.1:{web}"), ("hostname", f"{hostname}:{web}")):
        status, body = found[denied]
        assert status == 403, found
        assert f"{target} is not allowed" in body and "localhost" in body
    assert found["direct"] != "connected"
    # The model hears of the refusals too, after the command's own output.
    assert f"proxy refused 127.0.0.1:{web}" in output
    # stderr: one line per denial, then the count.
    assert f"network: denied GET 127.0.0.1:{web} (not in allowed_domains)" in result.stderr
    assert f"network: denied GET {hostname}:{web}".lower() in result.stderr.lower()
    assert "network allowlist: 2 request(s) denied" in result.stderr
    logs = "".join(p.read_text() for p in (box.root / "home" / "logs").glob("*.log"))
    denied = [json.loads(ln) for ln in logs.splitlines() if "sandbox.network_denied" in ln]
    assert {(d.get("host"), d.get("port")) for d in denied if "host" in d} == {
        ("127.0.0.1", web),
        (hostname, web),
    }
    assert any(d.get("count") == 2 for d in denied)
    # The proxy's socket directory (bound in read-only) went with the run.
    assert found["socket_dirs"], found
    for directory in found["socket_dirs"]:
        assert not Path(directory).exists(), directory


def test_landlock_refuses_the_allowlist(box: Box, model_server: ModelServer) -> None:
    result = box.exec(model_server.config_args(), "workspace-write", "landlock", *ALLOW_LOCALHOST)
    assert result.returncode == 3, result.stderr
    assert "allowed_domains cannot be enforced: Landlock" in result.stderr
    assert "Traceback" not in result.stderr
    assert model_server.bodies == []  # refused before the model was asked anything
