"""The console scripts' entry point (`interpreter`, `i`, `oiexec`): the CLI imported under a
guard.

Importing the CLI takes a few hundred milliseconds (click, the command tree). A Ctrl-C or a
batch's stop signal in that window used to end the process with a Python traceback and death
by SIGINT; it now ends as any interrupt of the CLI does: one line and exit 130. This module
imports nothing but `sys` before the guard is in place.
"""

import sys


def lean_process() -> None:
    """Keep what a run never uses out of the process. `import httpx` imports its own command
    line client (`httpx._main`, which pulls in rich, pygments and click's whole tree) when those
    are installed, and they are (rich draws batch progress bars): ~75 modules on every run for
    a program oiexec never calls. A None entry in sys.modules makes that import fail, and
    httpx then defines a stub `main` instead, as it does when they are absent."""
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
    # pydantic looks for plugins (`pydantic` entry points) when it builds its first model, and
    # the module that looks imports importlib.metadata at its top: with email, zipfile and
    # their kin ~47 modules and a tenth of a second of every run, to find no plugin (none is
    # installed with oiexec, and PYDANTIC_DISABLE_PLUGINS would still pay the import). This
    # CLI's process answers "no plugins" itself; the Python API, imported by someone else's
    # program, leaves pydantic alone. The process runs are forked from (`runner/launch.py`)
    # is ours too, and calls this first thing.
    if "pydantic" not in sys.modules:
        import types

        loader = types.ModuleType("pydantic.plugin._loader")
        loader.get_plugins = tuple  # type: ignore[attr-defined]  # () : no plugins
        sys.modules.setdefault("pydantic.plugin._loader", loader)


#: `interpreter --version` as click's version option prints it, answered before click and
#: the command tree are imported (a version check in a CI step should cost nothing).
_VERSION_FLAGS = (["--version"], ["-V"])


def _help_page(args: list[str]) -> str | None:
    """The shipped help page for `interpreter [COMMAND...] --help|-h` (`cli/help_cache`), or
    None where click must answer: another form of the command line (an alias such as `e`
    prints its own name in the usage line), or a terminal narrower than 80 columns (click
    wraps to such a terminal; from 80 columns on it wraps at 78, as the pages are)."""
    if not args or args[-1] not in ("--help", "-h"):
        return None
    words = args[:-1]
    if any(word.startswith("-") for word in words) or _columns() < 80:
        return None
    try:
        from oiexec._help_pages import PAGES
    except ImportError:
        return None
    return PAGES.get(" ".join(words))


def _columns() -> int:
    """The terminal's width as click reads it (`shutil.get_terminal_size`: COLUMNS, else the
    terminal of stdout, else 80), without importing shutil and what it brings."""
    import os

    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns > 0:
        return columns
    stdout = sys.__stdout__
    try:
        return (os.get_terminal_size(stdout.fileno()).columns or 80) if stdout else 80
    except (AttributeError, ValueError, OSError):
        return 80


def main() -> None:
    if sys.argv[1:] in _VERSION_FLAGS:
        from oiexec.core.version import __version__

        sys.stdout.write(f"interpreter, version {__version__}\n")
        return
    page = _help_page(sys.argv[1:])
    if page is not None:
        sys.stdout.write(page)
        return
    lean_process()
    try:
        from oiexec.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("interrupted by SIGINT\n")
        raise SystemExit(130) from None
    cli_main()
