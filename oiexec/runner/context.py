"""What the model is told about its surroundings, and attached images."""

from __future__ import annotations

import base64
import mimetypes
import os
from pathlib import Path

from oiexec.errors import UsageError
from oiexec.sandbox.base import SandboxPolicy
from oiexec.types import ImageInput


def build_environment_context(cwd: Path, policy: SandboxPolicy) -> str:
    from oiexec.harness.agents_md import environment_context

    return environment_context(
        cwd=cwd,
        shell=os.environ.get("SHELL", "/bin/bash"),
        sandbox_mode=policy.mode,
        network_access=not policy.network_disabled,
        writable_roots=[str(root) for root in policy.writable_roots()],
    )


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
