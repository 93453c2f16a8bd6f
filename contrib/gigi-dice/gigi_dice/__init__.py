"""Gigi's dice plugin: one read-only tool, everyone may use it once a guild enables it."""

from __future__ import annotations

import secrets
from importlib.resources import files
from typing import Any

from gigi_core import hookimpl


@hookimpl
def register_manifests(register: Any) -> None:
    register(files(__name__) / "gigi.yaml")


@hookimpl
def register_tools(register: Any) -> None:
    register("dice.roll", roll)


async def roll(ctx: Any, sides: int, count: int = 1) -> dict[str, Any]:
    """Roll with the OS's randomness; the guild's ``max_count`` caps the number of dice."""
    limit = int(ctx.config.get("max_count", 100)) if isinstance(ctx.config, dict) else 100
    if count > limit:
        raise ValueError(f"this server allows at most {limit} dice per roll")
    faces = [secrets.randbelow(sides) + 1 for _ in range(count)]
    return {"faces": faces, "total": sum(faces)}
