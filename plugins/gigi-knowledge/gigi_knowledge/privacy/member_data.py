"""Per-member data (``export_user_data``, ``delete_user_data``) and the guild purge.

Export: decisions they made or claimed, actions they own or recorded, entities that are
them, notes naming them. From a channel they cannot read now (or when no surface here can
tell) a row keeps only what is theirs: its id, channel, times, status and their own part;
text synthesised there and other members' ids are left out (``WITHHELD``). Delete: first
their copies in memory (``erasure``), then entities that are them (with their relationships
and vectors) and notes only about them are deleted; elsewhere they are replaced by
``FORMER`` ("a former member"), ids and the names they had, so the record stays without
naming them.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from gigi_knowledge import tables
from gigi_knowledge.privacy.erasure import FORMER, forget_in_memory, scrub_names
from gigi_knowledge.search.reads import action_view, decision_view, member_in, readable_now
from gigi_knowledge.service import ready
from gigi_knowledge.source_refs import iso

WITHHELD = "from a channel you cannot read now: only your own part is exported"
D, A, E, R, S, V, SM = (
    tables.decisions,
    tables.actions,
    tables.entities,
    tables.relationships,
    tables.signals,
    tables.embeddings,
    tables.summaries,
)


def _guild(table: sa.Table, guild_id: str | None) -> list[Any]:
    return [] if guild_id is None else [table.c.guild_id == guild_id]


async def export_user(kernel: Any, user_id: str, guild_id: str | None) -> dict[str, Any] | None:
    svc = await ready(kernel)
    await svc.notes.flush()  # what the pipeline has queued is theirs too
    dia = svc.dialect
    async with svc.engine.connect() as conn:
        decisions = (
            await conn.execute(
                sa.select(D).where(
                    *_guild(D, guild_id),
                    sa.or_(
                        member_in(dia, D.c.decided_by, user_id),
                        member_in(dia, D.c.asserted_by, user_id),
                    ),
                )
            )
        ).all()
        actions = (
            await conn.execute(
                sa.select(A).where(
                    *_guild(A, guild_id),
                    sa.or_(A.c.owner_id == user_id, member_in(dia, A.c.asserted_by, user_id)),
                )
            )
        ).all()
        entities = (
            await conn.execute(sa.select(E).where(*_guild(E, guild_id), E.c.user_id == user_id))
        ).all()
        signals = (
            await conn.execute(
                sa.select(S).where(*_guild(S, guild_id), member_in(dia, S.c.participants, user_id))
            )
        ).all()
    if not (decisions or actions or entities or signals):
        return None
    readable = await _readable(
        kernel, user_id, {r.guild_id for r in (*decisions, *actions, *signals)}
    )

    def shown(r: Any) -> bool:
        return r.channel_id in readable.get(r.guild_id, frozenset())

    return {
        "decisions": [
            decision_view(r) | {"guild_id": r.guild_id} if shown(r) else _own_decision(r, user_id)
            for r in decisions
        ],
        "actions": [
            action_view(r) | {"guild_id": r.guild_id} if shown(r) else _own_action(r, user_id)
            for r in actions
        ],
        "entities": [
            {
                "id": r.id,
                "guild_id": r.guild_id,
                "type": r.entity_type,
                "name": r.name,
                "aliases": r.aliases,
                "mentions": r.mention_count,
                "last_mentioned": iso(r.last_mentioned_ms),
            }
            for r in entities
        ],
        "notes": [
            {
                "id": r.id,
                "guild_id": r.guild_id,
                "channel_id": r.channel_id,
                "type": r.signal_type,
                "occurred_at": iso(r.occurred_ms),
            }
            | (
                {"summary": r.summary, "source_ref": r.source_ref}
                if shown(r)
                else {"withheld": WITHHELD}
            )
            for r in signals
        ],
    }


async def _readable(kernel: Any, user_id: str, guilds: set[str]) -> dict[str, frozenset[str]]:
    """Per guild, the channels the member may read now (empty when no surface can tell)."""
    out: dict[str, frozenset[str]] = {}
    for guild in guilds:
        out[guild] = await readable_now(kernel, guild, user_id) or frozenset()
    return out


def _own_decision(r: Any, user_id: str) -> dict[str, Any]:
    """A decision from a channel they cannot read now: their part, not the channel's text."""
    return {
        "id": r.id,
        "guild_id": r.guild_id,
        "channel_id": r.channel_id,
        "decided_by": [user_id] if user_id in (r.decided_by or []) else [],
        "claimed_by": [user_id] if user_id in (r.asserted_by or []) else [],
        "decided_at": iso(r.decided_ms),
        "status": r.status,
        "withheld": WITHHELD,
    }


def _own_action(r: Any, user_id: str) -> dict[str, Any]:
    return {
        "id": r.id,
        "guild_id": r.guild_id,
        "channel_id": r.channel_id,
        "owner_id": r.owner_id if r.owner_id == user_id else None,
        "recorded_by_you": user_id in (r.asserted_by or []),
        "deadline": iso(r.deadline_ms),
        "status": r.status,
        "created_at": iso(r.created_ms),
        "withheld": WITHHELD,
    }


def _swap(values: list[str] | None, user_id: str) -> list[str]:
    out: list[str] = []
    for v in values or []:
        v = FORMER if v == user_id else v
        if v not in out:
            out.append(v)
    return out


async def delete_user(kernel: Any, user_id: str, guild_id: str | None) -> dict[str, int]:
    svc = await ready(kernel)
    # In memory first: their messages would otherwise be extracted again after this.
    await forget_in_memory(svc, user_id, guild_id)
    dia = svc.dialect
    counts = {"entities": 0, "notes_deleted": 0, "rows_anonymised": 0, "names_replaced": 0}
    svc.caches.forget(guild_id)
    async with svc.engine.begin() as conn:
        found = (
            await conn.execute(
                sa.select(E.c.id, E.c.name, E.c.aliases).where(
                    *_guild(E, guild_id), E.c.user_id == user_id
                )
            )
        ).all()
        ents = [r.id for r in found]
        names = {n for r in found for n in [r.name, *(r.aliases or [])] if n}
        if ents:
            await conn.execute(
                sa.delete(R).where(sa.or_(R.c.source_id.in_(ents), R.c.target_id.in_(ents)))
            )
            await conn.execute(
                sa.delete(V).where(V.c.source_type == "entity", V.c.source_id.in_(ents))
            )
            await conn.execute(sa.delete(E).where(E.c.id.in_(ents)))
            k = tables.entity_keys
            await conn.execute(sa.delete(k).where(k.c.entity_id.in_(ents)))
            counts["entities"] = len(ents)
        for r in (
            await conn.execute(
                sa.select(S).where(*_guild(S, guild_id), member_in(dia, S.c.participants, user_id))
            )
        ).all():
            if set(r.participants) == {user_id}:  # only about them
                await conn.execute(
                    sa.delete(V).where(V.c.source_type == "signal", V.c.source_id == r.id)
                )
                await conn.execute(sa.delete(S).where(S.c.id == r.id))
                counts["notes_deleted"] += 1
            else:
                await conn.execute(
                    sa.update(S)
                    .where(S.c.id == r.id)
                    .values(participants=_swap(r.participants, user_id))
                )
                counts["rows_anonymised"] += 1
        for r in (
            await conn.execute(
                sa.select(D).where(
                    *_guild(D, guild_id),
                    sa.or_(
                        member_in(dia, D.c.decided_by, user_id),
                        member_in(dia, D.c.asserted_by, user_id),
                    ),
                )
            )
        ).all():
            await conn.execute(
                sa.update(D)
                .where(D.c.id == r.id)
                .values(
                    decided_by=_swap(r.decided_by, user_id),
                    asserted_by=_swap(r.asserted_by, user_id),
                )
            )
            counts["rows_anonymised"] += 1
        for r in (
            await conn.execute(
                sa.select(A).where(
                    *_guild(A, guild_id),
                    sa.or_(A.c.owner_id == user_id, member_in(dia, A.c.asserted_by, user_id)),
                )
            )
        ).all():
            values: dict[str, Any] = {"asserted_by": _swap(r.asserted_by, user_id)}
            if r.owner_id == user_id:
                values |= {"owner_id": None, "owner_name": FORMER}
            await conn.execute(sa.update(A).where(A.c.id == r.id).values(**values))
            counts["rows_anonymised"] += 1
        for r in (
            await conn.execute(
                sa.select(SM).where(
                    *_guild(SM, guild_id), member_in(dia, SM.c.participants, user_id)
                )
            )
        ).all():
            await conn.execute(
                sa.update(SM)
                .where(SM.c.id == r.id)
                .values(participants=_swap(r.participants, user_id))
            )
            counts["rows_anonymised"] += 1
        await conn.execute(
            sa.update(V)
            .where(*_guild(V, guild_id), V.c.author_id == user_id)
            .values(author_id=None)
        )
        # Free text: an unresolved owner name or a summary naming them by a name they had.
        counts["names_replaced"] = await scrub_names(conn, guild_id, names)
    for key in [
        k for k in svc.last_seen if k[2] == user_id and (guild_id is None or k[0] == guild_id)
    ]:
        del svc.last_seen[key]
    svc.notes.forget_member(user_id, guild_id)
    t = tables.last_seen
    async with svc.engine.begin() as conn:
        await conn.execute(sa.delete(t).where(*_guild(t, guild_id), t.c.user_id == user_id))
    return counts


async def purge_guild(kernel: Any, guild_id: str) -> dict[str, int]:
    svc = await ready(kernel)
    svc.channels.pop(guild_id, None)
    svc.drop_channel(guild_id)
    svc.notes.discard(guild_id)
    svc.caches.forget(guild_id)
    await svc.notes.flush()
    counts: dict[str, int] = {}
    async with svc.engine.begin() as conn:
        for table in tables.ALL:
            result = await conn.execute(sa.delete(table).where(table.c.guild_id == guild_id))
            if result.rowcount:
                counts[table.name] = int(result.rowcount)
    return counts
