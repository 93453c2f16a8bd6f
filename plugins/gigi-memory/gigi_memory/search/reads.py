"""Counting, searching and listing remembered messages: SQL for each backend.

Full text goes through the engine's own index (SQLite FTS5, PostgreSQL ``tsvector`` with the
``simple`` configuration); mentions through their own table, never substring search. Query
words come from ``text.query_words`` (only letters, digits and marks), and are bound as
parameters inside a quoted FTS5 phrase or through ``phraseto_tsquery`` / ``plainto_tsquery``,
so ``"``, ``*``, ``NEAR``, ``-`` or ``:`` in what a member typed are plain text, never syntax.

Every read filters on the guild, the channels of the scope, ``deleted_ms IS NULL`` and
``retention_until_ms > now``: a message past its retention is gone for reads even before
the retention job deletes it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

MAX_SEARCH_WORDS = 32
COMMON_MATCHES = 5000  # a search word in this many messages or more ranks nothing: dropped
COMMON_SECONDS = 600.0  # how long a word's (capped) message count is trusted
_common: dict[tuple[str, int, str], tuple[float, int]] = {}  # (store, cap, word) -> (at, count)
_shares: dict[tuple[Any, ...], tuple[float, bool]] = {}  # (store, scope) -> (at, FTS5 orders)
MESSAGE_COLUMNS = (
    "m.id, m.guild_id, m.message_id, m.channel_id, m.parent_channel_id, m.author_id, "
    "m.surface, m.created_ms, m.edited_ms, m.search_text, m.sealed_key_id, m.sealed_nonce, "
    "m.sealed_text"
)


@contextlib.asynccontextmanager
async def connection(engine: Any, dialect: str, *, transaction: bool = False) -> AsyncIterator[Any]:
    """A connection for search's statements. On PostgreSQL in autocommit unless
    ``transaction``: each statement is one round trip, with no ``BEGIN`` before it and no
    ``ROLLBACK`` when the pool takes the connection back; every search statement reads one
    consistent snapshot on its own. The vector path asks for a transaction: its ``hnsw.*``
    settings are ``SET LOCAL``, so they never stay on a pooled connection (nor, behind a
    transaction-pooling PgBouncer, on a server connection another client gets next)."""
    async with engine.connect() as conn:
        if dialect == "postgresql" and not transaction:
            await conn.execution_options(isolation_level="AUTOCOMMIT")
        yield conn


@dataclass(frozen=True)
class Filters:
    guild_id: str
    channel_ids: tuple[str, ...]
    include_threads: bool
    now_ms: int
    author: str | None = None
    mentioned: str | None = None
    since_ms: int | None = None
    until_ms: int | None = None


def _where(f: Filters) -> tuple[str, dict[str, Any], list[sa.BindParameter[Any]]]:
    clauses = [
        "m.guild_id = :guild",
        "m.deleted_ms IS NULL",
        "m.retention_until_ms > :now",
    ]
    params: dict[str, Any] = {"guild": f.guild_id, "now": f.now_ms, "chans": list(f.channel_ids)}
    if f.include_threads:
        clauses.append("(m.channel_id IN :chans OR m.parent_channel_id IN :chans)")
    else:
        clauses.append("m.channel_id IN :chans")
    if f.author is not None:
        clauses.append("m.author_id = :author")
        params["author"] = f.author
    if f.mentioned is not None:
        clauses.append(
            "EXISTS (SELECT 1 FROM memory_mentions mm WHERE mm.guild_id = m.guild_id "
            "AND mm.message_id = m.message_id AND mm.user_id = :mentioned)"
        )
        params["mentioned"] = f.mentioned
    if f.since_ms is not None:
        clauses.append("m.created_ms >= :since")
        params["since"] = f.since_ms
    if f.until_ms is not None:
        clauses.append("m.created_ms < :until")
        params["until"] = f.until_ms
    return " AND ".join(clauses), params, [sa.bindparam("chans", expanding=True)]


def _phrase(dialect: str, words: list[str]) -> tuple[str, str, dict[str, Any]]:
    """(FROM, condition, params) matching messages that contain the words in this order."""
    if dialect == "sqlite":
        return (
            "memory_fts CROSS JOIN memory_messages m ON m.id = memory_fts.rowid",
            "memory_fts MATCH :phrase",
            {"phrase": '"' + " ".join(words) + '"'},
        )
    return (
        "memory_messages m",
        "m.search_tsv @@ phraseto_tsquery('simple', :phrase)",
        {"phrase": " ".join(words)},
    )


def _occurrences(dialect: str, words: list[str]) -> tuple[str, dict[str, Any]]:
    """SQL summing how often the phrase occurs in each counted message's search text.

    Search text is words joined by single spaces, so an occurrence is the phrase between
    word boundaries. PostgreSQL: ``regexp_count`` of a space plus the phrase followed by a
    space (a lookahead, so back-to-back occurrences are all found). SQLite has no regular
    expressions: the spaces are doubled (every word stands as `` w ``) and the length the
    phrase's removal takes away is divided by its length. Both count non-overlapping
    occurrences, left to right, so they agree; words hold no regex metacharacters.
    """
    phrase = " ".join(words)
    if dialect == "sqlite":
        return (
            "coalesce(sum((length(' ' || replace(m.search_text, ' ', '  ') || ' ') - "
            "length(replace(' ' || replace(m.search_text, ' ', '  ') || ' ', :occ, ''))) "
            "/ length(:occ)), 0)",
            {"occ": " " + phrase.replace(" ", "  ") + " "},
        )
    return (
        "coalesce(sum(regexp_count(' ' || m.search_text || ' ', :occ)), 0)",
        {"occ": " " + phrase + "(?= )"},
    )


async def count(
    conn: Any, dialect: str, f: Filters, words: list[str] | None
) -> tuple[int, int | None]:
    """(messages, occurrences of the words in them; None without words), in one query."""
    where, params, binds = _where(f)
    source = "memory_messages m"
    occurrences = "NULL"
    if words:
        source, match, extra = _phrase(dialect, words)
        where = f"{match} AND {where}"
        occurrences, occ = _occurrences(dialect, words)
        params |= extra | occ
    sql = f"SELECT count(*), {occurrences} FROM {source} WHERE {where}"
    row = (await conn.execute(sa.text(sql).bindparams(*binds), params)).one()
    return int(row[0] or 0), None if row[1] is None else int(row[1])


async def word_counts(conn: Any, dialect: str, words: list[str]) -> dict[str, int]:
    """How many messages hold each word, across the store, counted up to ``COMMON_MATCHES``
    and remembered for ``COMMON_SECONDS``: the document frequencies of search's BM25 (a
    word at the cap is common enough that its exact count changes nothing)."""
    if dialect == "sqlite":
        sql = "SELECT count(*) FROM (SELECT 1 FROM memory_fts WHERE memory_fts MATCH :w LIMIT :cap)"
    else:
        sql = (
            "SELECT count(*) FROM (SELECT 1 FROM memory_messages m "
            "WHERE m.search_tsv @@ plainto_tsquery('simple', :w) LIMIT :cap) x"
        )
    out: dict[str, int] = {}
    now = time.monotonic()
    store = str(conn.engine.url)
    for word in words:
        key = (store, COMMON_MATCHES, word)
        known = _common.get(key)
        if known is None or now - known[0] > COMMON_SECONDS:
            w = f'"{word}"' if dialect == "sqlite" else word
            n = int(await conn.scalar(sa.text(sql), {"w": w, "cap": COMMON_MATCHES}) or 0)
            if len(_common) > 50_000:
                _common.clear()
            known = _common[key] = (now, n)
        out[word] = known[1]
    return out


async def selective_words(conn: Any, dialect: str, words: list[str]) -> list[str]:
    """The query's words without those in ``COMMON_MATCHES`` messages or more: "the" or
    "we" weigh almost nothing in BM25, yet ranking every message that has them is most of a
    search's time. When every word is that common, all are kept."""
    if len(words) < 2:
        return words
    counts = await word_counts(conn, dialect, words)
    return [w for w in words if counts[w] < COMMON_MATCHES] or words


async def _fts5_orders(conn: Any, f: Filters) -> bool:
    """SQLite: whether FTS5 should order the matches itself (``ORDER BY memory_fts.rank``).

    It ranks every match store-wide, then the join reads ledger rows until ``k`` pass; the
    other form reads every match's ledger row and ranks only those that pass. Measured over
    100k messages (p50, the same hits): scope holding 90 % of the matches 4.2 against 7.3
    ms, 10 % 6.5 against 5.1, an author filter (1 in 50) 9.9 against 4.6, a period (10 %)
    6.4 against 5.1. So only when the scope holds at least half the store's messages and no
    author, mention or period narrows it (the scope's share is counted once per
    ``COMMON_SECONDS``)."""
    if f.author is not None or f.mentioned is not None:
        return False
    if f.since_ms is not None or f.until_ms is not None:
        return False
    key = (str(conn.engine.url), f.guild_id, f.channel_ids, f.include_threads)
    now = time.monotonic()
    known = _shares.get(key)
    if known is None or now - known[0] > COMMON_SECONDS:
        chans = "m.channel_id IN :chans"  # the channel index alone: no row is read
        if f.include_threads:
            chans = f"({chans} OR m.parent_channel_id IN :chans)"
        sql = sa.text(
            "SELECT count(*), (SELECT count(*) FROM memory_messages) FROM memory_messages m "
            f"WHERE m.guild_id = :guild AND {chans}"
        ).bindparams(sa.bindparam("chans", expanding=True))
        params = {"guild": f.guild_id, "chans": list(f.channel_ids)}
        scope, store = (await conn.execute(sql, params)).one()
        if len(_shares) > 10_000:
            _shares.clear()
        known = _shares[key] = (now, bool(store) and scope * 2 >= store)
    return known[1]


@dataclass(frozen=True)
class Near:
    """A query vector the full-text hits are measured against (PostgreSQL): each hit then
    carries ``vdist``, the cosine distance of its nearest segment of that model (NULL
    without one), so an approximate vector answer can be checked against them."""

    model: str
    dims: int
    literal: str  # the vector as pgvector's text form


async def fulltext_candidates(
    conn: Any,
    dialect: str,
    f: Filters,
    words: list[str],
    limit: int,
    near: Near | None = None,
    weights: dict[str, float] | None = None,
) -> list[Any]:
    """The full-text path: messages containing any of the words, best first (BM25 / cover
    density); with ``near`` (PostgreSQL only), each with its vector distance ``vdist``.

    ``weights`` (a word's idf): PostgreSQL orders by the summed weights of the words a
    message holds before cover density, which has no idf of its own and would otherwise
    fill ``limit`` with messages repeating a common word (SQLite's BM25 has idf already)."""
    words = list(dict.fromkeys(words))[:MAX_SEARCH_WORDS]
    words = await selective_words(conn, dialect, words)
    where, params, binds = _where(f)
    params["k"] = limit
    if dialect == "sqlite":
        params["q"] = " OR ".join(f'"{w}"' for w in words)
        if await _fts5_orders(conn, f):
            # The table's own ``rank`` (BM25): FTS5 ranks every match and hands them over
            # best first, so the ledger is read until ``k`` rows pass the filters.
            rank, order = "memory_fts.rank", "memory_fts.rank"
        else:  # ``bm25()`` per row that passed the filters, then a sort of those rows
            rank, order = "bm25(memory_fts)", "rank"
        sql = (
            f"SELECT {MESSAGE_COLUMNS}, {rank} AS rank "
            "FROM memory_fts CROSS JOIN memory_messages m ON m.id = memory_fts.rowid "
            f"WHERE memory_fts MATCH :q AND {where} ORDER BY {order} LIMIT :k"
        )
    else:
        parts = []
        for i, word in enumerate(words):
            params[f"w{i}"] = word
            parts.append(f"plainto_tsquery('simple', :w{i})")
        order = "rank DESC"
        if weights and len(words) > 1:
            terms = []
            for i, word in enumerate(words):
                params[f"iw{i}"] = float(weights.get(word, 1.0))
                terms.append(
                    f"CASE WHEN m.search_tsv @@ plainto_tsquery('simple', :w{i}) "
                    f"THEN CAST(:iw{i} AS float8) ELSE 0 END"
                )
            order = f"({' + '.join(terms)}) DESC, rank DESC"
        sql = (
            f"SELECT {MESSAGE_COLUMNS}, ts_rank_cd(m.search_tsv, q.q) AS rank "
            f"FROM memory_messages m, (SELECT ({' || '.join(parts)}) AS q) q "
            f"WHERE m.search_tsv @@ q.q AND {where} ORDER BY {order} LIMIT :k"
        )
        if near is not None:  # the k hits' own segments only (by message), after the LIMIT
            d = int(near.dims)
            params |= {"near_model": near.model, "near_dims": d, "near_q": near.literal}
            sql = (
                f"SELECT ft.*, (SELECT min(s.embedding::vector({d}) <=> CAST(:near_q AS "
                f"vector({d}))) FROM memory_segments s WHERE s.message_row_id = ft.id AND "
                f"s.model = :near_model AND s.dims = :near_dims) AS vdist FROM ({sql}) ft "
                "ORDER BY ft.rank DESC"
            )
    return list((await conn.execute(sa.text(sql).bindparams(*binds), params)).all())


async def followers(conn: Any, row_ids: list[int]) -> dict[int, int]:
    """For each of ``row_ids``, the message right after it in its channel (or thread):
    ``{next id: id}``. Deleted and expired messages are skipped over. Search credits a
    matching reply with the match it answers (both already passed every read filter)."""
    if not row_ids:
        return {}
    sql = sa.text(
        "SELECT p.id AS prev_id, (SELECT n.id FROM memory_messages n "
        "WHERE n.guild_id = p.guild_id AND n.channel_id = p.channel_id "
        # A range on the channel index's time (the OR alone made SQLite read every later
        # message: 0.5 s at 100k), then the tie on the id as a filter.
        "AND n.created_ms >= p.created_ms "
        "AND (n.created_ms > p.created_ms OR n.id > p.id) "
        "AND n.deleted_ms IS NULL AND n.retention_until_ms > :now "
        "ORDER BY n.created_ms, n.id LIMIT 1) AS next_id "
        "FROM memory_messages p WHERE p.id IN :ids"
    ).bindparams(sa.bindparam("ids", expanding=True))
    rows = await conn.execute(sql, {"ids": list(row_ids), "now": int(time.time() * 1000)})
    return {int(n): int(p) for p, n in rows if n is not None}


async def by_ids(conn: Any, f: Filters, row_ids: list[int]) -> list[Any]:
    """The rows among ``row_ids`` that pass every read filter (a few: ``IN`` suffices)."""
    if not row_ids:
        return []
    where, params, binds = _where(f)
    params["ids"] = list(row_ids)
    sql = sa.text(
        f"SELECT {MESSAGE_COLUMNS} FROM memory_messages m WHERE m.id IN :ids AND {where}"
    ).bindparams(*binds, sa.bindparam("ids", expanding=True))
    return list((await conn.execute(sql, params)).all())


LENGTH_SAMPLE = 1000  # newest messages of a scope whose mean length BM25 normalises by
STATS_CAP = 100_000  # a scope's messages are counted up to this many for BM25's N
_scopes: dict[tuple[Any, ...], tuple[float, float, int]] = {}  # scope -> (at, mean, messages)
_scope_words: dict[tuple[Any, ...], tuple[float, int]] = {}  # (scope, word) -> (at, messages)


def _plain(f: Filters) -> Filters:
    """The scope alone (its channels), without the search's author or period: the
    collection BM25's statistics describe."""
    return Filters(f.guild_id, f.channel_ids, f.include_threads, f.now_ms)


async def collection(conn: Any, f: Filters) -> tuple[float, int]:
    """(mean words per message in the scope's newest ``LENGTH_SAMPLE``, messages in the
    scope up to ``STATS_CAP``), remembered for ``COMMON_SECONDS``: BM25's length norm and
    its N. Per scope, not per store: a member's name means little in a channel where they
    write half the messages, however rare it is across the server."""
    key = (str(conn.engine.url), f.guild_id, f.channel_ids, f.include_threads)
    now = time.monotonic()
    known = _scopes.get(key)
    if known is None or now - known[0] > COMMON_SECONDS:
        where, params, binds = _where(_plain(f))
        params |= {"k": LENGTH_SAMPLE, "cap": STATS_CAP}
        sql = (
            f"SELECT m.search_text FROM memory_messages m WHERE {where} "
            "ORDER BY m.created_ms DESC LIMIT :k"
        )
        rows = (await conn.execute(sa.text(sql).bindparams(*binds), params)).all()
        lengths = [t.count(" ") + 1 for (t,) in rows if t]
        mean = sum(lengths) / len(lengths) if lengths else 1.0
        total = await conn.scalar(
            sa.text(
                f"SELECT count(*) FROM (SELECT 1 FROM memory_messages m WHERE {where} LIMIT :cap) x"
            ).bindparams(*binds),
            params,
        )
        if len(_scopes) > 10_000:
            _scopes.clear()
        known = _scopes[key] = (now, mean, int(total or 0))
    return known[1], known[2]


async def scope_counts(conn: Any, dialect: str, f: Filters, words: list[str]) -> dict[str, int]:
    """How many of the scope's messages hold each word (BM25's document frequencies),
    remembered for ``COMMON_SECONDS``. Asked only for words under ``COMMON_MATCHES`` across
    the store (``word_counts``), so a count reads at most that many index entries."""
    where, params, binds = _where(_plain(f))
    scope = (str(conn.engine.url), f.guild_id, f.channel_ids, f.include_threads)
    now = time.monotonic()
    out: dict[str, int] = {}
    for word in words:
        known = _scope_words.get((scope, word))
        if known is None or now - known[0] > COMMON_SECONDS:
            source, match, extra = _phrase(dialect, [word])
            sql = f"SELECT count(*) FROM {source} WHERE {match} AND {where}"
            n = int(await conn.scalar(sa.text(sql).bindparams(*binds), params | extra) or 0)
            if len(_scope_words) > 50_000:
                _scope_words.clear()
            known = _scope_words[(scope, word)] = (now, n)
        out[word] = known[1]
    return out


async def author_counts(conn: Any, f: Filters, authors: list[str]) -> dict[str, int]:
    """Messages each author has in the scope: a name word's document count."""
    if not authors:
        return {}
    where, params, binds = _where(_plain(f))
    params["authors"] = authors
    sql = sa.text(
        f"SELECT m.author_id, count(*) FROM memory_messages m WHERE {where} "
        "AND m.author_id IN :authors GROUP BY m.author_id"
    ).bindparams(*binds, sa.bindparam("authors", expanding=True))
    return {a: int(n) for a, n in await conn.execute(sql, params)}


async def recent(conn: Any, f: Filters, limit: int) -> list[Any]:
    where, params, binds = _where(f)
    params["k"] = limit
    sql = (
        f"SELECT {MESSAGE_COLUMNS} FROM memory_messages m WHERE {where} "
        "ORDER BY m.created_ms DESC, m.id DESC LIMIT :k"
    )
    return list((await conn.execute(sa.text(sql).bindparams(*binds), params)).all())


async def channel_counts(conn: Any, guild_id: str, now: int) -> dict[str, dict[str, Any]]:
    """Per channel (threads under their channel): stored messages, oldest and newest."""
    sql = sa.text(
        "SELECT coalesce(m.parent_channel_id, m.channel_id) AS channel, count(*) AS n, "
        "min(m.created_ms) AS oldest, max(m.created_ms) AS newest FROM memory_messages m "
        "WHERE m.guild_id = :guild AND m.deleted_ms IS NULL AND m.retention_until_ms > :now "
        "GROUP BY coalesce(m.parent_channel_id, m.channel_id)"
    )
    rows = await conn.execute(sql, {"guild": guild_id, "now": now})
    return {
        r.channel: {"messages": r.n, "oldest_ms": r.oldest, "newest_ms": r.newest} for r in rows
    }
