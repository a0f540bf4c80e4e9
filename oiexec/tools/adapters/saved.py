"""Too-long command outputs kept in files for the run, for the products whose result names a
file holding the whole output (Claude Code, Qwen Code, opencode). The folder is removed when
the run's tools close."""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
from pathlib import Path

from oiexec.core import rundirs
from oiexec.tools.framework import Runtime

_KEY = "saved_outputs"


class SavedOutputs:
    """One private folder per run; each output gets a new file in it."""

    def __init__(self) -> None:
        self._dir: Path | None = None
        self._dir_fd: int | None = None
        self._numbers = itertools.count(1)

    def save(self, text: str) -> Path | None:
        """The file now holding `text`, or None when it could not be written (the result
        then carries the cut output alone)."""
        try:
            if self._dir is None or self._dir_fd is None:
                self._dir = rundirs.make("oiexec-output-")
                # Files are made through this fd, without following links: the folder sits in
                # the shared /tmp, where a command could try to plant a link in it.
                self._dir_fd = os.open(self._dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            name = f"output-{next(self._numbers)}.txt"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
            fd = os.open(name, flags, 0o600, dir_fd=self._dir_fd)
        except OSError:
            return None
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        return self._dir / name

    def close(self) -> None:
        if self._dir_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._dir_fd)
            self._dir_fd = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


def save_output(rt: Runtime, text: str) -> Path | None:
    """Keep `text` in a file of the run (see `SavedOutputs.save`)."""
    saved = rt.extras.get(_KEY)
    if not isinstance(saved, SavedOutputs):
        saved = SavedOutputs()
        rt.extras[_KEY] = saved
    return saved.save(text)
