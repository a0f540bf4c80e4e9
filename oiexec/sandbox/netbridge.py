"""Run inside a bwrap sandbox whose network is an allowlist, in front of the command:

    python3 -I -S -c "$(cat netbridge.py)" SOCKET -- COMMAND...

It listens on 127.0.0.1 (an ephemeral port) in the sandbox's own network namespace, which has
nothing else, forwards each connection to the runner's proxy on the Unix socket SOCKET
(oiexec.sandbox.netproxy), and execs COMMAND with the proxy variables pointing at that port.
The forwarder is a grandchild, so the command (which keeps the bridge's pid, the sandbox's
PID 2) is not its parent; it ends with the sandbox when the command exits.

It runs with the command's privileges and holds none of the runner's: replacing or killing it
gains a command nothing. Standard library only (`-S`: no site packages), no oiexec imports.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
import time

MAX_CONNECTIONS = 128
_CHUNK = 64 * 1024
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
NO_PROXY_VARS = ("NO_PROXY", "no_proxy")


def _copy(source: socket.socket, target: socket.socket) -> None:
    try:
        while data := source.recv(_CHUNK):
            target.sendall(data)
        target.shutdown(socket.SHUT_WR)
    except OSError:
        for sock in (source, target):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def _serve_one(client: socket.socket, path: str, slots: threading.Semaphore) -> None:
    try:
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(path)
        except OSError:
            upstream.close()
            return
        back = threading.Thread(target=_copy, args=(upstream, client), daemon=True)
        back.start()
        _copy(client, upstream)
        back.join()
        upstream.close()
    finally:
        client.close()
        slots.release()


def serve(listener: socket.socket, path: str) -> None:
    slots = threading.Semaphore(MAX_CONNECTIONS)
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            time.sleep(0.1)  # out of descriptors, say: the command may close some
            continue
        if not slots.acquire(blocking=False):
            client.close()
            continue
        try:
            threading.Thread(target=_serve_one, args=(client, path, slots), daemon=True).start()
        except RuntimeError:  # no thread to be had (the command's process limit)
            client.close()
            slots.release()


def _detach_forwarder(listener: socket.socket, path: str) -> None:
    """Fork the forwarder off as a grandchild and reap the middle child."""
    middle = os.fork()
    if middle == 0:
        try:
            if os.fork() == 0:
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)  # the command's pipes close when the command exits
                serve(listener, path)
        finally:
            os._exit(0)
    os.waitpid(middle, 0)


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write("usage: netbridge.py SOCKET -- COMMAND...\n")
        return 125
    path, command = argv[1], argv[3:]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(MAX_CONNECTIONS)
    except OSError as exc:
        sys.stderr.write(f"oiexec network bridge: cannot listen on 127.0.0.1: {exc}\n")
        return 125
    port = listener.getsockname()[1]
    _detach_forwarder(listener, path)
    listener.close()
    env = dict(os.environ)
    for name in PROXY_VARS:
        env[name] = f"http://127.0.0.1:{port}"
    for name in NO_PROXY_VARS:
        env.pop(name, None)
    try:
        os.execvpe(command[0], command, env)
    except OSError as exc:
        sys.stderr.write(f"{command[0]}: {exc.strerror}\n")
        return 127 if isinstance(exc, FileNotFoundError) else 126
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv))
