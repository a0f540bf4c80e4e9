"""What the model is told about its surroundings, and attached images."""

from __future__ import annotations

import base64
import mimetypes
from pathlib import Path

from oiexec.core.errors import UsageError
from oiexec.core.types import ImageInput


def read_images(paths: tuple[Path, ...]) -> tuple[ImageInput, ...]:
    images = []
    for path in paths:
        mime, _ = mimetypes.guess_type(path.name)
        if not mime or not mime.startswith("image/"):
            raise UsageError(f"--image {path}: not an image file (png, jpeg, gif or webp)")
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise UsageError(f"--image {path}: {exc.strerror or exc}") from exc
        encoded = base64.b64encode(data).decode("ascii")
        images.append(ImageInput(path=str(path), data_url=f"data:{mime};base64,{encoded}"))
    return tuple(images)
