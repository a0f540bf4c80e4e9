"""What the run reads from files named on the command line, before the thread starts:
attached images and the `--output-schema` JSON Schema (each a regular file, bounded:
core/userfile)."""

from __future__ import annotations

import base64
import json
import mimetypes
from pathlib import Path
from typing import Any

from oiexec.core.errors import UsageError
from oiexec.core.types import ImageInput
from oiexec.core.userfile import IMAGE_MAX, SCHEMA_MAX, read_user_file, user_text


def read_images(paths: tuple[Path, ...]) -> tuple[ImageInput, ...]:
    images = []
    for path in paths:
        mime, _ = mimetypes.guess_type(path.name)
        if not mime or not mime.startswith("image/"):
            raise UsageError(f"--image {path}: not an image file (png, jpeg, gif or webp)")
        data = read_user_file(path, name=f"--image {path}", cap=IMAGE_MAX)
        encoded = base64.b64encode(data).decode("ascii")
        images.append(ImageInput(path=str(path), data_url=f"data:{mime};base64,{encoded}"))
    return tuple(images)


def read_output_schema(path: Path) -> dict[str, Any]:
    """The schema in `path`, checked to be a valid JSON Schema; a `UsageError` otherwise."""
    # Codex's words first, then the flag: the file is named wherever the message is read.
    name = f"Failed to read output schema file {path} (--output-schema)"
    text = user_text(read_user_file(path, name=name, cap=SCHEMA_MAX), name=name)
    try:
        schema = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{name}: {exc}") from exc
    except RecursionError:
        raise UsageError(f"{name}: nested too deeply to be a JSON Schema") from None
    if not isinstance(schema, dict):
        raise UsageError(f"Failed to read output schema file {path}: not a JSON object")
    check_output_schema(schema, f"in {path}")
    return schema


def check_output_schema(schema: dict[str, Any], where: str) -> None:
    """A `UsageError` naming `where` unless `schema` is a valid JSON Schema (the file's, or
    one a Python caller passed)."""
    import jsonschema

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise UsageError(f"Invalid output schema {where}: {exc.message}") from exc
    except RecursionError:
        raise UsageError(f"Invalid output schema {where}: nested too deeply") from None
