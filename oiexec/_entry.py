"""The console scripts' entry point (`interpreter`, `i`, `oiexec`): the CLI imported under a
guard.

Importing the CLI takes a few hundred milliseconds (click, the command tree). A Ctrl-C or a
batch's stop signal in that window used to end the process with a Python traceback and death
by SIGINT; it now ends as any interrupt of the CLI does: one line and exit 130. This module
imports nothing but `sys` before the guard is in place.
"""

import sys


def _lean() -> None:
    """Keep what a run never uses out of the process. `import httpx` imports its own command
    line client (`httpx._main`, which pulls in rich, pygments and click's whole tree) when those
    are installed, and they are (rich draws batch progress bars): ~75 modules on every run for
    a program oiexec never calls. A None entry in sys.modules makes that import fail, and
    httpx then defines a stub `main` instead, as it does when they are absent."""
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]


#: `interpreter --version` as click's version option prints it, answered before click and
#: the command tree are imported (a version check in a CI step should cost nothing).
_VERSION_FLAGS = (["--version"], ["-V"])


def main() -> None:
    if sys.argv[1:] in _VERSION_FLAGS:
        from oiexec.core.version import __version__

        sys.stdout.write(f"interpreter, version {__version__}\n")
        return
    _lean()
    try:
        from oiexec.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("interrupted by SIGINT\n")
        raise SystemExit(130) from None
    cli_main()
