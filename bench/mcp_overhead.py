"""What MCP servers cost a run: start (spawn, initialize, tools/list), one tool call, stop.

    python bench/mcp_overhead.py [--runs 5] [--calls 200]

Uses the tests' stdio server (tests/support/mcp_servers/mini.py, the SDK's MCPServer).
Median wall times; most of the start is the server's own Python start-up and imports.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from oiexec.config.mcp import McpServerConfig
from oiexec.mcp.manager import McpManager

ROOT = Path(__file__).resolve().parent.parent


def _config() -> McpServerConfig:
    return McpServerConfig(
        command=sys.executable, args=["-m", "tests.support.mcp_servers.mini"], cwd=str(ROOT)
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    starts, stops, calls = [], [], []
    for _ in range(args.runs):
        manager = McpManager({"mini": _config()}, cwd=ROOT)
        began = time.perf_counter()
        [status] = manager.start()
        starts.append(time.perf_counter() - began)
        assert status.started, status.error
        for _ in range(args.calls // args.runs):
            began = time.perf_counter()
            manager.call("mini", "echo", {"text": "x"}, 10)
            calls.append(time.perf_counter() - began)
        began = time.perf_counter()
        manager.close()
        stops.append(time.perf_counter() - began)
    print(f"start (spawn + initialize + tools/list): {statistics.median(starts) * 1000:8.1f} ms")
    print(f"tools/call echo:                         {statistics.median(calls) * 1000:8.2f} ms")
    print(f"stop (stdin closed, group killed):       {statistics.median(stops) * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
