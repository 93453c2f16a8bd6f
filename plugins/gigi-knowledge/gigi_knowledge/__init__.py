"""Gigi's knowledge pipeline: extract-and-forget decisions, actions, entities and notes.

The hook implementations only; importing this module is cheap. The work lives in
``ingest`` (the gate, the window, the tiers), ``extract`` (model calls and their checks),
``writer`` (validated rows, batched), ``search`` (reads and the retriever), ``followup``
(summaries, nudges and contradiction notes through the outbox), ``admin`` and ``privacy``.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Any

from gigi_core import hookimpl

__all__ = ["flush"]


@hookimpl
def register_manifests(register: Any) -> None:
    register(files(__name__) / "gigi.yaml")


@hookimpl
def register_tools(register: Any) -> None:
    from gigi_knowledge.handlers import ACTIONS

    for name, handler in ACTIONS.items():
        register(name, handler)


@hookimpl
def register_migrations(register: Any) -> None:
    register("knowledge", files(__name__) / "migrations")


@hookimpl
def register_jobs(register: Any) -> None:
    from gigi_knowledge.handlers import contradiction_job, staleness_job, summary_job

    # Hourly: each channel's daily is due after 08:00 in its own time zone.
    register("knowledge.summaries", summary_job, schedule="5 * * * *", retries=2, timeout=1800.0)
    register(
        "knowledge.staleness", staleness_job, schedule="0 9,15 * * *", retries=3, timeout=600.0
    )
    register(
        "knowledge.contradictions",
        contradiction_job,
        schedule="*/10 * * * *",
        retries=3,
        timeout=600.0,
    )


@hookimpl
def register_retrievers(register: Any) -> None:
    from gigi_knowledge.search.retriever import KnowledgeRetriever

    register("knowledge", KnowledgeRetriever)


@hookimpl
def register_commands(cli: Any) -> None:
    from gigi_knowledge.admin.cli import add_commands

    add_commands(cli)


@hookimpl
async def startup(kernel: Any) -> None:
    from gigi_knowledge.service import service_of

    await service_of(kernel).start()


@hookimpl
async def shutdown(kernel: Any) -> None:
    svc = kernel.__dict__.get("gigi_knowledge")
    if svc is not None:
        await svc.close()


@hookimpl
def observe_event(event: Any, kernel: Any) -> None:
    from gigi_knowledge.ingest.observe import handle

    handle(event, kernel)


@hookimpl
async def export_user_data(user_id: str, guild_id: str | None, kernel: Any) -> Any:
    from gigi_knowledge.privacy.member_data import export_user

    return await export_user(kernel, user_id, guild_id)


@hookimpl
async def delete_user_data(user_id: str, guild_id: str | None, kernel: Any) -> Any:
    from gigi_knowledge.privacy.member_data import delete_user

    return await delete_user(kernel, user_id, guild_id)


@hookimpl
async def purge_guild_data(guild_id: str, kernel: Any) -> Any:
    from gigi_knowledge.privacy.member_data import purge_guild

    return await purge_guild(kernel, guild_id)


async def flush(kernel: Any, seconds: float = 30.0) -> bool:
    """Wait until every queued message went through the pipeline (tests, benchmarks)."""
    svc = kernel.__dict__.get("gigi_knowledge")
    return True if svc is None else await svc.settle(seconds)
