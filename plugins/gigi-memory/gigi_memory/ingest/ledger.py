"""The writer's statements: a run of creates, edits or deletes in the writer's transaction.

Creates are one multi-row ``INSERT … ON CONFLICT DO NOTHING`` (ids dedupe), after the
copies from history that a delete or edit mark forbids are dropped (``tombstones``). An
edit or delete of a message not stored, in a channel memory remembers, leaves such a mark.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from gigi_memory import tables
from gigi_memory.embedding import segments
from gigi_memory.policy import DAY_MS, now_ms
from gigi_memory.privacy import tombstones

IN_LIMIT = 500  # ids per IN (...) list


# The ledger's columns a create writes, in the order of the rows ``creates`` builds; the
# last five are the writer's ``Content`` (``ingest.contents``), appended as they are.
CONTENT = ("search_text", "content_hash", "sealed_key_id", "sealed_nonce", "sealed_text")
COLUMNS = (
    "guild_id",
    "message_id",
    "channel_id",
    "parent_channel_id",
    "author_id",
    "surface",
    "reply_to_id",
    "created_ms",
    "edited_ms",
    "deleted_ms",
    "retention_until_ms",
    *CONTENT,
)
MENTION_COLUMNS = ("guild_id", "message_id", "user_id", "channel_id", "author_id", "created_ms")


def _rows(
    prepared: list[Any],
) -> tuple[list[tuple[Any, ...]], dict[tuple[str, str], list[tuple[Any, ...]]]]:
    """Ledger rows as tuples in ``COLUMNS`` order and each message's mention rows, in one
    pass: ``COPY`` takes the tuples as they are, the ``unnest`` fallback transposes them,
    SQLite gets them as parameter dicts."""
    rows: list[tuple[Any, ...]] = []
    row = rows.append
    mentions: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
    for op, content in prepared:
        d = op.data
        guild, mid, channel, author = op.guild_id, d["message_id"], d["channel_id"], d["author_id"]
        created = d["created_ms"]
        row(
            (
                guild,
                mid,
                channel,
                d.get("parent_id"),
                author,
                d.get("surface") or "discord",
                d.get("reply_to_id"),
                created,
                d.get("edited_ms"),
                None,
                created + d["retention_days"] * DAY_MS,
                *content,
            )
        )
        if d.get("mentions"):  # most messages mention nobody: no key, no list
            mentions[(guild, mid)] = [
                (guild, mid, user, channel, author, created)
                for user in dict.fromkeys(d["mentions"])
            ]
    return rows, mentions


async def copy_creates(begin: Any, prepared: list[Any]) -> int | None:
    """PostgreSQL, live messages: ``COPY`` the rows and their mentions in a transaction of
    their own, the bulk path of the raw benchmark (psycopg formats the rows in C, the server
    skips the planner). None when the caller must take ``creates`` instead: copies from
    history (tombstones to check), or an id already stored (a redelivery: the transaction,
    which held nothing else, is rolled back whole; ``creates`` then deduplicates).

    No savepoint: a run of creates is all its transaction holds, so rolling it back loses
    nothing, and the two round trips (``SAVEPOINT``, ``RELEASE``) each waited for the event
    loop's next turn while the server sat idle (bench/memory_ingest.py). ``begin`` opens the
    transaction (the writer's: on the connection it holds between batches).
    """
    import psycopg

    if any(op.data.get("copy_ms") is not None for op, _ in prepared):
        return None
    rows, mentions = _rows(prepared)
    if not rows:
        return 0
    mention_rows = [r for found in mentions.values() for r in found]
    try:
        async with begin() as conn:
            driver = (await conn.get_raw_connection()).driver_connection
            await _copy(driver, tables.messages.name, COLUMNS, rows)
            if mention_rows:
                await _copy(driver, tables.mentions.name, MENTION_COLUMNS, mention_rows)
    except psycopg.Error as exc:  # raised by psycopg itself, outside SQLAlchemy's wrapping
        if exc.sqlstate == "23505":  # unique_violation: an id already stored
            return None
        # As SQLAlchemy's class (OperationalError, DataError, ...), so the writer tells a
        # lost connection (retried) from a bad row (dropped) as for its other statements.
        raise sa.exc.DBAPIError.instance("COPY", None, exc, psycopg.Error) from exc
    return len(rows)


async def creates(svc: Any, conn: Any, prepared: list[Any]) -> int:
    """Creates that deduplicate: ``INSERT … ON CONFLICT DO NOTHING`` (after the copies from
    history a mark forbids are dropped), mentions for the rows actually inserted."""
    m = tables.messages
    prepared = await tombstones.drop_blocked(conn, prepared)
    rows, mentions = _rows(prepared)
    if not rows:
        return 0
    if svc.dialect == "postgresql":
        inserted = await _insert_arrays(
            conn, m, COLUMNS, rows, returning=("guild_id", "message_id")
        )
    else:
        stmt = tables.insert_for(svc.dialect, m).returning(m.c.guild_id, m.c.message_id)
        params = [dict(zip(COLUMNS, r, strict=True)) for r in rows]
        inserted = (await conn.execute(stmt, params)).all()
    mention_rows = [r for key in inserted for r in mentions.get((key[0], key[1]), ())]
    if mention_rows:
        if svc.dialect == "postgresql":
            await _insert_arrays(conn, tables.mentions, MENTION_COLUMNS, mention_rows)
        else:
            await conn.execute(
                tables.insert_for(svc.dialect, tables.mentions),
                [dict(zip(MENTION_COLUMNS, r, strict=True)) for r in mention_rows],
            )
    return len(inserted)


async def _copy(
    driver: Any, table: str, names: tuple[str, ...], rows: list[tuple[Any, ...]]
) -> None:
    """``write_row`` per tuple: psycopg formats each in C into its buffer and awaits only
    when a buffer is full (measured: as fast as formatting one buffer ourselves)."""
    async with driver.cursor() as cur:
        async with cur.copy(f"COPY {table} ({', '.join(names)}) FROM STDIN") as copy:
            write = copy.write_row
            for row in rows:
                await write(row)


def _array_type(column: sa.Column) -> str:
    if isinstance(column.type, sa.LargeBinary):
        return "bytea[]"
    if isinstance(column.type, sa.Integer):  # BigInteger too
        return "bigint[]"
    return "text[]"


async def _insert_arrays(
    conn: Any,
    table: sa.Table,
    names: tuple[str, ...],
    rows: list[tuple[Any, ...]],
    returning: tuple[str, ...] = (),
    *,
    conflict: bool = True,
) -> list[Any]:
    """PostgreSQL: ``INSERT … SELECT FROM unnest(arrays) ON CONFLICT DO NOTHING``.

    One parameter per column, not per value: the statement text is the same for every batch,
    so psycopg prepares it once per connection instead of parsing a 13,000-parameter INSERT
    each batch (the writer's throughput on PostgreSQL, bench/memory_ingest.py).
    """
    casts = ", ".join(
        f"CAST(:a{i} AS {_array_type(table.c[name])})" for i, name in enumerate(names)
    )
    sql = f"INSERT INTO {table.name} ({', '.join(names)}) SELECT * FROM unnest({casts})"
    if conflict:
        sql += " ON CONFLICT DO NOTHING"
    if returning:
        sql += f" RETURNING {', '.join(returning)}"
    params = {f"a{i}": list(column) for i, column in enumerate(zip(*rows, strict=True))}
    result = await conn.execute(sa.text(sql), params)
    return list(result.all()) if returning else []


async def edits(svc: Any, conn: Any, prepared: list[Any]) -> int:
    if not prepared:
        return 0
    m = tables.messages
    stmt = (
        sa.update(m)
        .where(
            m.c.guild_id == sa.bindparam("b_guild"),
            m.c.message_id == sa.bindparam("b_message"),
            m.c.channel_id == sa.bindparam("b_channel"),
            m.c.deleted_ms.is_(None),
        )
        .values(
            search_text=sa.bindparam("b_search"),
            sealed_key_id=sa.bindparam("b_key"),
            sealed_nonce=sa.bindparam("b_nonce"),
            sealed_text=sa.bindparam("b_sealed"),
            content_hash=sa.bindparam("b_hash"),
            edited_ms=sa.bindparam("b_edited"),
            vector_model=None,  # the old segments go below; the new text is embedded later
        )
    )
    params = [
        {
            "b_guild": op.guild_id,
            "b_message": op.data["message_id"],
            "b_channel": op.data["channel_id"],
            "b_search": c[0],
            "b_hash": c[1],
            "b_key": c[2],
            "b_nonce": c[3],
            "b_sealed": c[4],
            "b_edited": op.data["edited_ms"],
        }
        for op, c in prepared
    ]
    result = await conn.execute(stmt, params)
    changed = max(result.rowcount or 0, 0)
    # After the update, which waits for an embedding batch holding the row: that batch's
    # segments are committed by now and go too (before it, they could outlive the edit).
    await segments.drop_for_messages(
        conn, [(p["b_guild"], p["b_channel"], p["b_message"]) for p in params]
    )
    if changed < len(params):  # some are not stored (yet): a later copy must not undo the edit
        await _mark_edits(svc, conn, [op for op, _ in prepared])
    await _replace_mentions(conn, [op for op, _ in prepared])
    return changed


async def _replace_mentions(conn: Any, ops: list[Any]) -> None:
    """An edit that says whom its new text mentions replaces the message's mention rows:
    a mention edited away is no longer counted. The last edit of a message in the run wins."""
    latest: dict[tuple[str, str, str], tuple[str, ...]] = {}
    for op in ops:
        if op.data.get("mentions") is not None:
            key = (op.guild_id, op.data["channel_id"], op.data["message_id"])
            latest[key] = tuple(op.data["mentions"])
    if not latest:
        return
    m, mm = tables.messages, tables.mentions
    await conn.execute(
        sa.delete(mm).where(
            mm.c.guild_id == sa.bindparam("b_guild"),
            mm.c.channel_id == sa.bindparam("b_channel"),
            mm.c.message_id == sa.bindparam("b_message"),
        ),
        [{"b_guild": g, "b_channel": c, "b_message": i} for g, c, i in latest],
    )
    rows = [
        {"b_guild": g, "b_channel": c, "b_message": i, "b_user": user}
        for (g, c, i), users in latest.items()
        for user in users
    ]
    if not rows:
        return
    # Author and time come from the stored message; a message not stored gets no rows.
    source = sa.select(
        m.c.guild_id,
        m.c.message_id,
        sa.bindparam("b_user", type_=sa.String),
        m.c.channel_id,
        m.c.author_id,
        m.c.created_ms,
    ).where(
        m.c.guild_id == sa.bindparam("b_guild"),
        m.c.channel_id == sa.bindparam("b_channel"),
        m.c.message_id == sa.bindparam("b_message"),
        m.c.deleted_ms.is_(None),
    )
    await conn.execute(sa.insert(mm).from_select(list(MENTION_COLUMNS), source), rows)


async def _mark_edits(svc: Any, conn: Any, ops: list[Any]) -> None:
    by_channel: dict[tuple[str, str, str | None], list[Any]] = {}
    for op in ops:
        key = (op.guild_id or "", op.data["channel_id"], op.data.get("parent_id"))
        by_channel.setdefault(key, []).append(op)
    for (guild, channel, parent), group in by_channel.items():
        days = tombstones.retention_days(svc, guild, channel, parent)
        if not days:
            continue
        held = await tombstones.stored(conn, guild, [op.data["message_id"] for op in group])
        marks: dict[str, tombstones.Mark] = {}
        for op in group:
            if op.data["message_id"] not in held:
                kind = "withheld" if op.data.get("withheld") else "edited"
                new = tombstones.Mark(kind, op.data["edited_ms"])
                prev = marks.get(op.data["message_id"])
                if prev is None or tombstones.RANK[kind] >= tombstones.RANK[prev.kind]:
                    marks[op.data["message_id"]] = new
        await tombstones.record(conn, svc.dialect, guild, channel, marks, days)


async def deletes(svc: Any, conn: Any, run: list[Any]) -> int:
    m, mm = tables.messages, tables.mentions
    when = now_ms()
    total = 0
    for op in run:
        ids = list(dict.fromkeys(op.data["message_ids"]))
        for start in range(0, len(ids), IN_LIMIT):
            part = ids[start : start + IN_LIMIT]
            result = await conn.execute(
                sa.update(m)
                .where(
                    m.c.guild_id == op.guild_id,
                    m.c.channel_id == op.data["channel_id"],
                    m.c.message_id.in_(part),
                    m.c.deleted_ms.is_(None),
                )
                .values(
                    deleted_ms=when,
                    search_text=None,
                    sealed_key_id=None,
                    sealed_nonce=None,
                    sealed_text=None,
                    content_hash=None,
                    vector_model=None,
                )
            )
            changed = max(result.rowcount or 0, 0)
            total += changed
            await segments.drop_for_messages(  # after the update, as in ``edits``
                conn, [(op.guild_id, op.data["channel_id"], i) for i in part]
            )
            if changed < len(part):
                await _mark_deletes(svc, conn, op, part, when)
            await conn.execute(
                sa.delete(mm).where(
                    mm.c.guild_id == op.guild_id,
                    mm.c.channel_id == op.data["channel_id"],
                    mm.c.message_id.in_(part),
                )
            )
    return total


async def _mark_deletes(svc: Any, conn: Any, op: Any, ids: list[str], when: int) -> None:
    """Ids not in the ledger, in a channel memory remembers: no later copy may bring them."""
    guild, channel = op.guild_id or "", op.data["channel_id"]
    days = tombstones.retention_days(svc, guild, channel, op.data.get("parent_id"))
    if not days:
        return
    held = await tombstones.stored(conn, guild, ids)
    marks = {i: tombstones.Mark("deleted", when) for i in ids if i not in held}
    await tombstones.record(conn, svc.dialect, guild, channel, marks, days)
