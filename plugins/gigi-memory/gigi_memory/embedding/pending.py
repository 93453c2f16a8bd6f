"""Claiming messages to embed and checkpointing them: how several workers share one guild.

An embedding batch claims up to ``limit`` of a guild's messages that lack vectors of the
current model, oldest first (``embed_claim``/``embed_claimed_ms``, migrations/memory_0005),
skipping rows another batch holds: ``FOR UPDATE SKIP LOCKED`` on PostgreSQL, SQLite's single
writer there. A claim older than its lease (its worker died or froze) is free again. The
write releases the claim and, in the same transaction, marks the rows still claimed by this
batch and unchanged since the claim (an edit or delete meanwhile wins), replaces their
segments and inserts the new ones: one round trip for the lock, one for the rest.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from gigi_memory.embedding import segments
from gigi_memory.policy import now_ms

COLUMNS = (
    "id, guild_id, message_id, channel_id, parent_channel_id, author_id, created_ms, "
    "edited_ms, search_text, sealed_key_id, sealed_nonce, sealed_text"
)
# The database's clock, read once per statement (an init plan, not once per row).
PG_NOW = "(SELECT CAST(extract(epoch FROM clock_timestamp()) * 1000 AS bigint))"


@dataclass(frozen=True)
class Claim:
    """One batch's claim: its token and the rows as they were when claimed."""

    token: str
    rows: list[Any]


@dataclass(frozen=True)
class Planned:
    """A claimed row and what to write for it: ``(span, unit vector)`` per segment."""

    row: Any
    parts: list[tuple[segments.Span, Any]]


def _claim_sql(dialect: str, which: str) -> str:
    now = PG_NOW if dialect == "postgresql" else ":now"
    lock = " FOR UPDATE SKIP LOCKED" if dialect == "postgresql" else ""
    return (
        f"UPDATE memory_messages SET embed_claim = :token, embed_claimed_ms = {now} "
        "WHERE id IN (SELECT p.id FROM memory_messages p WHERE p.guild_id = :guild "
        f"AND {which} AND p.deleted_ms IS NULL AND p.search_text IS NOT NULL "
        f"AND (p.embed_claimed_ms IS NULL OR p.embed_claimed_ms < {now} - :lease) "
        f"ORDER BY p.id LIMIT :limit{lock}) RETURNING {COLUMNS}"
    )


# Messages never embedded first (the partial index ix_memory_messages_unembedded serves them
# in id order), then those embedded with another model (a model change re-embeds them).
NEVER = "p.vector_model IS NULL"
OTHER = "p.vector_model <> :key"


async def claim(
    engine: Any, dialect: str, guild_id: str, key: str, limit: int, lease_seconds: float
) -> Claim:
    """Claim up to ``limit`` messages of the guild without vectors of model ``key``."""
    token = secrets.token_hex(8)
    params: dict[str, Any] = {
        "token": token,
        "guild": guild_id,
        "key": key,
        "lease": int(lease_seconds * 1000),
    }
    if dialect != "postgresql":
        params["now"] = now_ms()
    rows: list[Any] = []
    async with engine.begin() as conn:
        for which in (NEVER, OTHER):
            params["limit"] = limit - len(rows)
            found = (await conn.execute(sa.text(_claim_sql(dialect, which)), params)).all()
            rows.extend(found)
            if len(rows) >= limit:
                break
    rows.sort(key=lambda r: r.id)
    return Claim(token, rows)


async def release(engine: Any, dialect: str, claim: Claim) -> None:
    """Give the batch's rows back (the embedder failed): the retry may claim them at once."""
    if not claim.rows:
        return
    async with engine.begin() as conn:
        await conn.execute(
            sa.text(
                "UPDATE memory_messages SET embed_claim = NULL, embed_claimed_ms = NULL "
                f"WHERE {_ids_match(dialect, 'id')} AND embed_claim = :token"
            ),
            {"ids": _ids_param(dialect, [r.id for r in claim.rows]), "token": claim.token},
        )


async def next_free_ms(
    engine: Any, dialect: str, guild_id: str, key: str, lease_seconds: float
) -> int | None:
    """Milliseconds until the oldest claim on a waiting message expires (None: no claim)."""
    now = PG_NOW if dialect == "postgresql" else ":now"
    claimed = (
        "SELECT embed_claimed_ms AS at FROM memory_messages WHERE guild_id = :guild "
        "AND embed_claimed_ms IS NOT NULL AND deleted_ms IS NULL AND "
    )
    async with engine.connect() as conn:
        value = await conn.scalar(
            sa.text(
                f"SELECT min(at) + :lease - {now} FROM ({claimed}vector_model IS NULL "
                f"UNION ALL {claimed}vector_model <> :key) AS c"
            ),
            {"guild": guild_id, "key": key, "lease": int(lease_seconds * 1000), "now": now_ms()},
        )
    return None if value is None else max(0, int(value))


def _ids_match(dialect: str, column: str) -> str:
    if dialect == "postgresql":
        return f"{column} = ANY(CAST(:ids AS bigint[]))"
    return f"{column} IN (SELECT value FROM json_each(:ids))"


def _ids_param(dialect: str, ids: list[int]) -> Any:
    if dialect == "postgresql":
        return ids
    import json

    return json.dumps(ids)


async def write(
    engine: Any, dialect: str, guild_id: str, claim: Claim, model: str, plan: list[Planned]
) -> tuple[int, int]:
    """Checkpoint the batch: (messages marked embedded, segments written)."""
    by_id = {p.row.id: p for p in plan}
    ids = _ids_param(dialect, sorted(by_id))
    lock = _PG_LOCK if dialect == "postgresql" else _SQLITE_LOCK
    async with engine.begin() as conn:
        held = (await conn.execute(sa.text(lock), {"ids": ids, "token": claim.token})).all()
        # Still ours and as read: not deleted, text kept, the same edit as when claimed.
        current = sorted(
            r[0]
            for r in held
            if r[2] is None and r[3] is not None and r[1] == by_id[r[0]].row.edited_ms
        )
        if not held:
            return 0, 0
        seg_rows = [
            _segment(dialect, guild_id, model, by_id[i].row, span, vector)
            for i in current
            for span, vector in by_id[i].parts
            if vector.any()
        ]
        if dialect == "postgresql":
            await _write_pg(conn, guild_id, model, [r[0] for r in held], current, seg_rows)
        elif current:
            await conn.execute(
                sa.text(
                    "UPDATE memory_messages SET vector_model = :model "
                    f"WHERE {_ids_match(dialect, 'id')}"
                ),
                {"model": model, "ids": _ids_param(dialect, current)},
            )
            await segments.drop_rows(conn, current)
            await segments.insert(conn, dialect, seg_rows)
    return len(current), len(seg_rows)


# Lock the batch's rows still claimed by it, in id order (two writers never wait on each
# other crosswise), reading what decides whether each still counts. PostgreSQL releases the
# claim in the write below (one row version less per message); SQLite here.
_PG_LOCK = (
    "SELECT id, edited_ms, deleted_ms, length(search_text) FROM memory_messages "
    "WHERE id = ANY(CAST(:ids AS bigint[])) AND embed_claim = :token ORDER BY id FOR UPDATE"
)
_SQLITE_LOCK = (
    "UPDATE memory_messages SET embed_claim = NULL, embed_claimed_ms = NULL "
    "WHERE id IN (SELECT value FROM json_each(:ids)) AND embed_claim = :token "
    "RETURNING id, edited_ms, deleted_ms, length(search_text)"  # raw: SQLite 3.40 answered
)  # ``deleted_ms IS NULL`` wrongly inside this RETURNING


def _segment(
    dialect: str, guild_id: str, model: str, row: Any, span: segments.Span, vector: Any
) -> dict[str, Any]:
    return {
        "guild_id": guild_id,
        "message_row_id": row.id,
        "channel_id": row.channel_id,
        "root_channel_id": row.parent_channel_id or row.channel_id,
        "author_id": row.author_id,
        "created_ms": row.created_ms,
        "seq": span.seq,
        "span_start": span.start,
        "span_end": span.end,
        "model": model,
        "dims": int(vector.shape[0]),
        "embedding": segments.encode(dialect, vector),
    }


_PG_SEGMENT_ARRAYS = (
    ("message_row_id", "bigint"),
    ("channel_id", "varchar"),
    ("root_channel_id", "varchar"),
    ("author_id", "varchar"),
    ("created_ms", "bigint"),
    ("seq", "integer"),
    ("span_start", "integer"),
    ("span_end", "integer"),
    ("dims", "integer"),
    ("embedding", "text"),
)
_PG_WRITE = (
    "WITH marked AS (UPDATE memory_messages SET vector_model = CASE WHEN "
    "id = ANY(CAST(:ids AS bigint[])) THEN :model ELSE vector_model END, embed_claim = NULL, "
    "embed_claimed_ms = NULL WHERE id = ANY(CAST(:held AS bigint[])) RETURNING id), "
    "dropped AS (DELETE FROM memory_segments WHERE message_row_id = ANY(CAST(:ids AS bigint[]))) "
    "INSERT INTO memory_segments (guild_id, model, "
    + ", ".join(name for name, _ in _PG_SEGMENT_ARRAYS)
    + ") SELECT :guild, :model, "
    + ", ".join(f"v.{name}" for name, _ in _PG_SEGMENT_ARRAYS[:-1])
    + ", CAST(v.embedding AS vector) FROM unnest("
    + ", ".join(f"CAST(:s_{name} AS {kind}[])" for name, kind in _PG_SEGMENT_ARRAYS)
    + ") AS v("
    + ", ".join(name for name, _ in _PG_SEGMENT_ARRAYS)
    + ")"
)


async def _write_pg(
    conn: Any,
    guild_id: str,
    model: str,
    held: list[int],
    ids: list[int],
    seg_rows: list[dict[str, Any]],
) -> None:
    """One statement: release the claim on ``held``, mark ``ids`` embedded, drop their old
    segments, insert the new ones (the same text every batch: prepared once per connection)."""
    params: dict[str, Any] = {"model": model, "held": held, "ids": ids, "guild": guild_id}
    for name, _ in _PG_SEGMENT_ARRAYS:
        params[f"s_{name}"] = [r[name] for r in seg_rows]
    await conn.execute(sa.text(_PG_WRITE), params)
