"""The package version, at the bottom of the layers so any module may name it.

Every layer that reports a version (the user agent of provider requests, the header of a run,
SARIF's tool entry, the MCP server's info) imports it from here; the package root re-exports
it. Build metadata reads this file (pyproject's `tool.hatch.version`).
"""

__version__ = "0.1.0"
