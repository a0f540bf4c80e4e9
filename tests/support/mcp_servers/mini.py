"""A stdio MCP server for the tests, written with the SDK's `MCPServer`.

    python -m tests.support.mcp_servers.mini [--pidfile FILE] [--envfile FILE]

Tools: `echo` (text), `big` (a long text), `image` (a 1x1 PNG with a caption), `slow`
(sleeps), `crash` (the process dies mid-call), `structured` (structured content), `fail`
(an `isError` result), `spawn` (starts a grandchild that sleeps and writes its pid),
`delete_all` (annotated destructive), `lookup` (annotated read-only), `save_note` and
`tidy_cache` (annotated writing, the first with the open world left to MCP's default).
Writes its pid to `--pidfile`, its environment as JSON to `--envfile`, and a line to stderr
when it starts.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
import time

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp_types import ToolAnnotations
from pydantic import BaseModel

PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)

server = MCPServer("mini")


@server.tool(description="Echo the text back.", structured_output=False)
def echo(text: str) -> str:
    return f"echo: {text}"


@server.tool(description="A tiny picture.", structured_output=False)
def image() -> list[object]:
    return ["a red dot", Image(data=PNG_1X1, format="png")]


@server.tool(description="Sleep for a while.", structured_output=False)
def slow(seconds: float) -> str:
    time.sleep(seconds)
    return "woke up"


@server.tool(description="A long text of the given size.", structured_output=False)
def big(size: int) -> str:
    return "".join(f"line {i:06d}\n" for i in range(size // 12 + 1))[:size]


@server.tool(description="Die mid-call.", structured_output=False)
def crash() -> str:
    sys.stderr.write("mini: crashing now\n")
    sys.stderr.flush()
    os._exit(3)


@server.tool(description="Structured weather.", structured_output=True)
def structured(city: str) -> dict[str, object]:
    return {"city": city, "temperature": 21}


@server.tool(description="Always fails.", structured_output=False)
def fail() -> str:
    raise ToolError("the tool failed on purpose")


@server.tool(
    description="Start a grandchild process that outlives nobody.", structured_output=False
)
def spawn(pidfile: str) -> str:
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import os,time; open({pidfile!r},'w').write(str(os.getpid())); time.sleep(300)",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    for _ in range(100):
        if os.path.exists(pidfile) and os.path.getsize(pidfile):
            break
        time.sleep(0.02)
    return f"spawned {child.pid}"


@server.tool(
    description="Delete everything.",
    annotations=ToolAnnotations(destructive_hint=True, read_only_hint=False),
    structured_output=False,
)
def delete_all() -> str:
    return "deleted everything"


@server.tool(
    description="Look something up.",
    annotations=ToolAnnotations(read_only_hint=True),
    structured_output=False,
)
def lookup(key: str) -> str:
    return f"value of {key}"


@server.tool(
    description="Save a note somewhere (open world unless said otherwise, per MCP).",
    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False),
    structured_output=False,
)
def save_note() -> str:
    return "note saved"


@server.tool(
    description="Tidy a local cache (a closed world).",
    annotations=ToolAnnotations(
        read_only_hint=False, destructive_hint=False, open_world_hint=False
    ),
    structured_output=False,
)
def tidy_cache() -> str:
    return "cache tidied"


class Confirmation(BaseModel):
    confirm: bool


@server.tool(description="Ask the user before doing it.", structured_output=False)
async def ask(ctx: Context) -> str:
    answer = await ctx.elicit("Really?", Confirmation)
    return f"the user answered: {answer.action}"


@server.resource("note://readme", description="What this server is.")
def readme() -> str:
    return "mini is a test server"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pidfile")
    parser.add_argument("--envfile")
    parser.add_argument("--exit", type=int, help="exit at once with this code")
    parser.add_argument("--hang", action="store_true", help="never answer initialize")
    parser.add_argument("--noise", action="store_true", help="print a non-JSON line on stdout")
    args = parser.parse_args()
    sys.stderr.write(f"mini: starting in {os.getcwd()}\n")
    sys.stderr.flush()
    if args.pidfile:
        with open(args.pidfile, "w") as handle:
            handle.write(str(os.getpid()))
    if args.envfile:
        with open(args.envfile, "w") as handle:
            json.dump(dict(os.environ), handle)
    if args.exit is not None:
        sys.stderr.write("mini: refusing to start\n")
        sys.exit(args.exit)
    if args.hang:
        time.sleep(300)
    if args.noise:
        print("hello from a chatty server", flush=True)
    server.run("stdio")


if __name__ == "__main__":
    main()
