"""Scan every column of every table for a string (a leaked secret must be nowhere)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import inspect, text


async def leaks(kernel: Any, needle: str) -> list[tuple[str, str]]:
    """(table, column) pairs whose value contains ``needle``; empty means nothing leaked."""

    def names(conn: Any) -> dict[str, list[str]]:
        insp = inspect(conn)
        return {t: [c["name"] for c in insp.get_columns(t)] for t in insp.get_table_names()}

    found: list[tuple[str, str]] = []
    async with kernel.db.engine.connect() as conn:
        for table, columns in (await conn.run_sync(names)).items():
            for row in await conn.execute(text(f'SELECT * FROM "{table}"')):
                for column, value in zip(columns, row, strict=True):
                    raw = bytes(value) if isinstance(value, bytes | memoryview) else None
                    hit = needle.encode() in raw if raw is not None else needle in str(value)
                    if value is not None and hit:
                        found.append((table, column))
    return found


async def race_clicks(env: Any, message: Any, clicks: list[tuple[Any, str]]) -> list[Any]:
    """Deliver several button clicks to the gateway *before* the bot handles any of them.

    SimCord's actor verbs settle after each action, so two ``click()`` calls never overlap;
    real double clicks and two admins do. This emits every INTERACTION_CREATE first and
    settles once (SimCord internals, pinned to 3.2.1), returning one result per click.
    """
    from simcord import interactions as sim_interactions
    from simcord.backend import serializers
    from simcord.enums import ComponentType, InteractionType
    from simcord.results import InteractionResult

    backend = env.backend
    stored = backend.get_message(message.channel.id, message.id)
    results = []
    for actor, custom_id in clicks:
        record, payload = sim_interactions.base_payload(
            backend,
            type=InteractionType.MESSAGE_COMPONENT,
            channel_id=stored.channel_id,
            guild_id=actor.guild.id,
            user_id=actor.id,
            data={"custom_id": custom_id, "component_type": ComponentType.BUTTON},
        )
        payload["message"] = dict(serializers.message_payload(backend, stored))
        record.source_message_id = stored.id
        backend.emit("INTERACTION_CREATE", payload)
        results.append(InteractionResult(env, record))
    await env.settle()
    return results
