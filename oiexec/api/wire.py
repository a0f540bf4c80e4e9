"""The job an API run's process is given (the `api-run` target's `ApiRunArgs`), as JSON
(never pickle): `ExecJob`/`ReviewJob` and the requests inside, encoded by `encode_job`:
dataclasses by field, each tagged with its class name from `_CLASSES` (the only classes
`decode_job` builds), paths and tuples tagged so they come back as they went. The messages
that come back are the child protocol's (`oiexec/runner/child_protocol.py`).
"""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path
from typing import Any

__all__ = ["decode_job", "encode_job"]

#: The job's classes, by the name the encoding carries, and where each lives.
_CLASSES = {
    "ExecJob": "oiexec.api.child",
    "ReviewJob": "oiexec.api.child",
    "ExecRequest": "oiexec.runner.request",
    "ResumeTarget": "oiexec.runner.request",
    "ReviewRequest": "oiexec.runner.review",
    "ConfigInputs": "oiexec.config.loader",
    "GatePolicy": "oiexec.review.gate",
    "UncommittedTarget": "oiexec.review.targets",
    "BaseBranchTarget": "oiexec.review.targets",
    "CommitTarget": "oiexec.review.targets",
    "CustomTarget": "oiexec.review.targets",
}


def encode_job(job: object) -> Any:
    """`job` as JSON-able data; a value of a type the child could not rebuild is a TypeError."""
    if job is None or isinstance(job, str | bool | int | float):
        return job
    if isinstance(job, Path):
        return {"@path": str(job)}
    if isinstance(job, tuple):
        return {"@tuple": [encode_job(v) for v in job]}
    if isinstance(job, list):
        return [encode_job(v) for v in job]
    if isinstance(job, dict):
        if not all(isinstance(k, str) for k in job):
            raise TypeError("only string keys cross to a run's process")
        return {"@dict": {k: encode_job(v) for k, v in job.items()}}
    name = type(job).__name__
    if dataclasses.is_dataclass(job) and _CLASSES.get(name) == type(job).__module__:
        fields = {f.name: encode_job(getattr(job, f.name)) for f in dataclasses.fields(job)}
        return {"@class": name, "fields": fields}
    raise TypeError(f"a {type(job).__name__} cannot be sent to a run's process")


def decode_job(data: Any) -> Any:
    """The value `encode_job` encoded; ValueError for anything it would not have written."""
    if data is None or isinstance(data, str | bool | int | float):
        return data
    if isinstance(data, list):
        return [decode_job(v) for v in data]
    if not isinstance(data, dict) or len(data) not in (1, 2):
        raise ValueError("not an encoded job")
    if "@path" in data and isinstance(data["@path"], str):
        return Path(data["@path"])
    if "@tuple" in data and isinstance(data["@tuple"], list):
        return tuple(decode_job(v) for v in data["@tuple"])
    if "@dict" in data and isinstance(data["@dict"], dict):
        return {k: decode_job(v) for k, v in data["@dict"].items()}
    name, fields = data.get("@class"), data.get("fields")
    if isinstance(name, str) and name in _CLASSES and isinstance(fields, dict):
        cls = getattr(importlib.import_module(_CLASSES[name]), name)
        return cls(**{k: decode_job(v) for k, v in fields.items()})
    raise ValueError("not an encoded job")
