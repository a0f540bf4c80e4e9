"""The console scripts' entry point (`interpreter`, `i`, `oiexec`): the CLI imported under a
guard.

Importing the CLI takes a few hundred milliseconds (click, the command tree). A Ctrl-C or a
batch's stop signal in that window used to end the process with a Python traceback and death
by SIGINT; it now ends as any interrupt of the CLI does: one line and exit 130. This module
imports nothing but `sys` before the guard is in place.
"""

import sys


def main() -> None:
    try:
        from oiexec.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("interrupted by SIGINT\n")
        raise SystemExit(130) from None
    cli_main()
