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
import tempfile
from pathlib import Path


def write_report(path: Path, data: bytes | str) -> None:
    """Replace `path` with `data` (str as UTF-8); raises OSError. The new file gets the
    usual mode for new files (0666 minus the umask)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(raw)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    # os.umask() would set it process-wide for a moment, racing other threads.
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status") as status:
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022
