"""Image generation: ``images.generate`` draws with the guild's ``image`` profile and posts
the pictures as files. It implements the ambient persona's ``ambient.picture``."""

from __future__ import annotations

from importlib.resources import files
from typing import Any

from gigi_core import hookimpl


@hookimpl
def register_manifests(register: Any) -> None:
    register(files(__name__) / "gigi.yaml")


@hookimpl
def register_tools(register: Any) -> None:
    from gigi_images.generate import generate

    register("images.generate", generate)
