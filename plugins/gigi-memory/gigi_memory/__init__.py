"""Gigi's guild memory: opt-in per channel, exact counts, hybrid full-text + vector search.

The hook implementations only. Importing this module is cheap (no SQLAlchemy); the work
lives in ``ingest`` (the event gate, redaction, the batching writer, sync and import),
``embedding`` (the vectors job), ``search`` (counts, search and the retriever), ``admin``
(the /memory commands, ``gigi memory``) and ``privacy`` (retention, erasure, tombstones).
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from typing import Any

from gigi_core import hookimpl

__all__ = ["flush"]

EMBED_JOBS = 4  # memory.embed's concurrency: batches of one guild embedded at once, all workers


@hookimpl
def register_manifests(register: Any) -> None:
    register(files(__name__) / "gigi.yaml")


@hookimpl
def register_tools(register: Any) -> None:
    from gigi_memory.handlers import ACTIONS

    for name, handler in ACTIONS.items():
        register(name, handler)


@hookimpl
def register_migrations(register: Any) -> None:
    register("memory", files(__name__) / "migrations")


@hookimpl
def register_jobs(register: Any) -> None:
    from gigi_memory.handlers import embed_job, retention_job, sync_job

    register("memory.retention", retention_job, schedule="17 * * * *", retries=2, timeout=1800.0)
    # Batches claim their rows, so several run at once (one per guild in each process).
    register(
        "memory.embed",
        embed_job,
        schedule="*/10 * * * *",
        concurrency=EMBED_JOBS,
        retries=5,
        timeout=600.0,
    )
    # Resumable from its checkpoint; retried while no surface here serves the guild.
    register("memory.sync", sync_job, retries=8, timeout=6 * 3600.0)


@hookimpl
def register_retrievers(register: Any) -> None:
    from gigi_memory.search.retriever import MemoryRetriever

    register("memory", MemoryRetriever)  # a factory: the engine builds it with the kernel


@hookimpl
def register_commands(cli: Any) -> None:
    from gigi_memory.admin.cli import add_commands

    add_commands(cli)


@hookimpl
async def startup(kernel: Any) -> None:
    from gigi_memory.service import service_of

    await service_of(kernel).start()


@hookimpl
async def shutdown(kernel: Any) -> None:
    svc = kernel.__dict__.get("gigi_memory")
    if svc is not None:
        await svc.close()


@hookimpl
def observe_event(event: Any, kernel: Any) -> None:
    _gate()(event, kernel)


@cache
def _gate() -> Any:
    """The gate, loaded with the first event rather than with the plugin; cached, as an
    ``import`` statement in the hook cost ~0.25 µs an event."""
    from gigi_memory.ingest.observe import handle

    return handle


@hookimpl
def check_tool_call(call: Any, action: Any) -> Any:
    """A purge without exactly one target is refused before anyone is asked to confirm it."""
    if action.name == "memory.purge":
        args = call["args"]
        if bool(args.get("channel")) == bool(args.get("everything")):
            from gigi_core import Decision

            return Decision.deny(
                "name one channel with channel:, or purge all with everything:true",
                "memory_purge_target",
            )
    return None


@hookimpl
async def export_user_data(user_id: str, guild_id: str | None, kernel: Any) -> Any:
    from gigi_memory.privacy.lifecycle import export_user

    return await export_user(kernel, user_id, guild_id)


@hookimpl
async def delete_user_data(user_id: str, guild_id: str | None, kernel: Any) -> Any:
    from gigi_memory.privacy.lifecycle import delete_user

    return await delete_user(kernel, user_id, guild_id)


@hookimpl
async def purge_guild_data(guild_id: str, kernel: Any) -> Any:
    from gigi_memory.privacy.lifecycle import purge_guild

    return await purge_guild(kernel, guild_id)


@hookimpl
async def channel_retention(guild_id: str, channel_id: str, kernel: Any) -> int | None:
    """The days memory keeps this channel (its mode is on, memory is on in the guild and
    the plugin is enabled there), from the policy cache; None otherwise."""
    if "memory" not in await kernel.plugin_state.enabled_plugins(guild_id):
        return None
    from gigi_memory.service import service_of

    cache = service_of(kernel).cache
    if not cache.loaded:
        await cache.load(kernel.db.engine)
    mode = cache.channel(guild_id, channel_id)
    if not cache.guild(guild_id).enabled or mode is None or mode.mode != "on":
        return None
    return cache.retention_of(guild_id, mode)


async def flush(kernel: Any, seconds: float | None = 10.0) -> bool:
    """Wait until every message the plugin queued so far is written, and on SQLite until the
    full-text index holds no word of removed text (which otherwise happens within a minute)."""
    svc = kernel.__dict__.get("gigi_memory")
    if svc is None:
        return True
    if not await svc.writer.flush(seconds):
        return False
    await svc.writer.compact_now()
    await svc.vectors.flush()  # the embedding job for what was written is queued
    return True
