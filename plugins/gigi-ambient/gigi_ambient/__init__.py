"""The ambient responder: a persona that follows the channels an admin enabled and answers
through a strict response envelope. The hook implementations only; the gate and
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
def register_jobs(register: Any) -> None:
    register("ambient.history_expire", _expire, schedule="17 * * * *")  # hourly


async def _expire(ctx: Any) -> None:
    from gigi_ambient.service import service_of

    await service_of(ctx.kernel).expire_stored()


@hookimpl
async def export_user_data(user_id: str, guild_id: str | None, kernel: Any) -> Any:
    """A member's words: this process's in-memory history and, where a server turned
    ``persist_history`` on, its stored rows."""
    from gigi_ambient.service import service_of

    svc = service_of(kernel)
    found: dict[str, dict[str, Any]] = {}
    for guild, entry in await svc.stored.of_author(guild_id, user_id):
        found[entry.key] = _exported(guild, entry)
    for guild in [guild_id] if guild_id is not None else list(svc._histories):
        for entry in svc.history(guild).entries:
            if entry.role == "user" and entry.author_id == user_id:
                found[entry.key] = _exported(guild, entry)
    return {"history": list(found.values())}


def _exported(guild_id: str, entry: Any) -> dict[str, Any]:
    return {
        "guild_id": guild_id,
        "channel_id": entry.channel_id,
        "message_id": entry.message_id,
        "text": entry.text,
        "at": entry.at.isoformat(),
    }


@hookimpl
async def delete_user_data(user_id: str, guild_id: str | None, kernel: Any) -> Any:
    from gigi_ambient.service import service_of

    return await service_of(kernel).forget_author(guild_id, user_id)


@hookimpl
async def purge_guild_data(guild_id: str, kernel: Any) -> Any:
    from gigi_ambient.service import service_of

    svc = service_of(kernel)
    stored = await svc.purge_history(guild_id)
    svc._channels.pop(guild_id, None)
    return {"channels": await svc.store.purge_guild(guild_id), "history": stored}
