"""The ambient responder: a persona that follows the channels an admin enabled and answers
through a strict response envelope (seed 003). The hook implementations only; the gate and
the workers live in ``service``, one message's path in ``responder``.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Any

from gigi_core import hookimpl


@hookimpl
def register_manifests(register: Any) -> None:
    register(files(__name__) / "gigi.yaml")


@hookimpl
def register_tools(register: Any) -> None:
    from gigi_ambient.commands import ACTIONS

    for name, handler in ACTIONS.items():
        register(name, handler)


@hookimpl
def register_migrations(register: Any) -> None:
    register("ambient", files(__name__) / "migrations")


@hookimpl
async def observe_event(event: Any, kernel: Any) -> None:
    from gigi_ambient.service import service_of

    await service_of(kernel).observe(event)


@hookimpl
async def shutdown(kernel: Any) -> None:
    svc = kernel.__dict__.get("gigi_ambient")
    if svc is not None:
        await svc.close()


@hookimpl
async def export_user_data(user_id: str, guild_id: str | None, kernel: Any) -> Any:
    """Only this process's in-memory history holds a member's words; nothing is stored."""
    svc = kernel.__dict__.get("gigi_ambient")
    if svc is None or guild_id is None:
        return {"history": []}
    entries = svc.history(guild_id).entries
    return {
        "history": [
            {"channel_id": e.channel_id, "message_id": e.message_id, "text": e.text}
            for e in entries
            if e.role == "user" and e.author_id == user_id
        ]
    }


@hookimpl
async def delete_user_data(user_id: str, guild_id: str | None, kernel: Any) -> Any:
    svc = kernel.__dict__.get("gigi_ambient")
    if svc is None or guild_id is None:
        return {"history": 0}
    return {"history": svc.history(guild_id).forget_author(user_id)}


@hookimpl
async def purge_guild_data(guild_id: str, kernel: Any) -> Any:
    from gigi_ambient.service import service_of

    svc = service_of(kernel)
    svc.history(guild_id).entries.clear()
    svc._channels.pop(guild_id, None)
    return {"channels": await svc.store.purge_guild(guild_id)}
