"""The catalog look-up in a process of its own, started ahead of when the run needs it.

A cold look-up (no memo yet, which is every run on a fresh CI machine) loads both catalogs:
about 0.2 s of CPU and 12–16 MiB that the runner would carry for the rest of the run, for two
numbers and a price (bench/catalog.py). Done in a short-lived process instead, it runs on
another core while the runner waits on a model request, and its memory is given back when it
exits (bench/run.py: the runner's peak RSS). When it starts: `catalog/facts.PendingFacts`.

The probe is our own module run by our own interpreter (`sys.executable`, the runner's),
isolated (`-I`: no PYTHON* variables, no user site, not the working directory on sys.path,
which is the workspace), from the home directory, with an environment of nothing but a
locale: it never sees an API key, and nothing in the workspace decides what it runs. It
prints one JSON line, the entry as the memo records it. Anything else (it cannot start, it
fails, it says something malformed, it takes too long) and the caller looks up in-process,
as before: the probe can make a run faster, never different.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from oiexec.catalog.data import CatalogEntry, CatalogPrice

__all__ = ["Probe", "entry_from_record", "record_of"]

#: A cold look-up takes 0.2–0.4 s; this is for a machine so loaded that waiting longer would
#: cost more than looking up in-process.
TIMEOUT = 20.0
#: The answer is a few hundred bytes; more is not an answer.
MAX_REPLY = 64 * 1024


class Probe:
    """A look-up under way in its own process."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self._proc = proc

    @classmethod
    def start(cls, provider_id: str, base_url: str | None, model: str) -> Probe | None:
        """Starts the probe; None if it cannot be started (the caller looks up itself)."""
        query = json.dumps([provider_id, base_url, model])
        argv = [sys.executable, "-I", "-X", "utf8", "-m", "oiexec.catalog.probe", query]
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                cwd=Path.home() if Path.home().is_dir() else "/",
                env={"LC_ALL": "C.UTF-8"},
                close_fds=True,
            )
        except OSError:
            return None
        return cls(proc)

    def entry(self, timeout: float = TIMEOUT) -> CatalogEntry | None:
        """The probe's answer, or None when it has none (the caller looks up itself)."""
        try:
            out, _ = self._proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.cancel()
            return None
        except BaseException:  # a signal while waiting: the probe does not outlive the wait
            self.cancel()
            raise
        if self._proc.returncode != 0 or len(out) > MAX_REPLY:
            return None
        try:
            return entry_from_record(json.loads(out))
        except (TypeError, ValueError):
            return None

    def wait(self, timeout: float) -> bool:
        """Whether the probe has exited within `timeout` seconds (its reply is a few hundred
        bytes: it never blocks on a full pipe)."""
        try:
            self._proc.wait(timeout=max(0.0, timeout))
        except subprocess.TimeoutExpired:
            return False
        return True

    def finished(self) -> bool:
        """Whether the probe has exited (its answer can be read without waiting)."""
        return self._proc.poll() is not None

    def cancel(self) -> None:
        """Ends the probe (a run that stops before it needs the answer)."""
        if self._proc.returncode is None:
            self._proc.kill()
            self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()


def record_of(entry: CatalogEntry) -> dict[str, Any]:
    """The entry as JSON data: the probe's answer and the memo's record."""
    return asdict(entry)


def entry_from_record(data: Any) -> CatalogEntry:
    """Raises TypeError or ValueError unless `data` is an entry as `record_of` wrote it."""
    if not isinstance(data, dict):
        raise TypeError("a catalog entry is an object")
    price = data.get("price")
    if price is not None:
        if not isinstance(price, dict):
            raise TypeError("a catalog price is an object")
        price = CatalogPrice(**price)
        _numbers(price.input_per_mtok, price.output_per_mtok)
        _numbers(price.cached_input_per_mtok, price.cache_write_per_mtok, optional=True)
    entry = CatalogEntry(**{**data, "price": price})
    _numbers(entry.context_window, entry.price_tier_from, optional=True)
    return entry


def _numbers(*values: object, optional: bool = False) -> None:
    for value in values:
        if value is None and optional:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"not a number: {value!r}")


def _without_price_updates() -> None:
    """genai-prices imports its price updater (an HTTP client and asyncio, ~50 modules) with
    its package; the probe reads only the snapshot shipped in the wheel, so the updater's
    names are stand-ins here. Should a release need more of that module, importing the package
    fails, the probe exits 1, and the runner looks up itself."""
    import types

    def unavailable(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("price updates are not used by oiexec")

    stub = types.ModuleType("genai_prices.update_prices")
    for name in ("UpdatePrices", "wait_prices_updated_async", "wait_prices_updated_sync"):
        setattr(stub, name, unavailable)
    sys.modules.setdefault("genai_prices.update_prices", stub)


def main(argv: list[str]) -> int:
    _without_price_updates()
    from oiexec.catalog.data import lookup

    try:
        provider_id, base_url, model = json.loads(argv[0])
    except (IndexError, TypeError, ValueError):
        return 2
    entry = lookup(str(provider_id), None if base_url is None else str(base_url), str(model))
    sys.stdout.write(json.dumps(record_of(entry)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
