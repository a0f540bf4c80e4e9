"""Writing a report (diff, JUnit, SARIF, last message) to the path the user named.

Reports are written by the runner, outside the sandbox, after the model's commands ran in
the very directories those paths often point into. A command could have left a symlink at
the report's path (`change.patch -> .git/hooks/pre-commit`), and writing through it would
put model-chosen content where the host executes it. So a report never writes through the
final component: it is written to a fresh temp file beside it and renamed over the path,
which replaces a planted link rather than following it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path


def write_report(path: Path, data: bytes | str) -> None:
    """Replace `path` with `data` (str as UTF-8); raises OSError. The new file gets the
    usual mode for new files (0666 minus the umask)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    # Created 0o666 so the kernel applies the umask (reading it would race other threads).
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        with os.fdopen(os.open(tmp, flags, 0o666), "wb") as handle:
            handle.write(raw)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
