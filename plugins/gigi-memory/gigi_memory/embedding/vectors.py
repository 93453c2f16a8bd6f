"""Embedding remembered messages: the source, the ``memory.embed`` job, lag and query vectors.

The writer commits a message (countable and full-text searchable at once), then asks for
the job here (``kick``, coalesced, never awaited by the writer). The job claims batches of
messages whose ``vector_model`` is not the guild's current model (``gigi_memory.embedding.pending``:
batches never overlap, so several jobs run at once, one loop per guild in each process),
re-applies the guild's redaction, cuts segments, embeds them and writes segments and
vectors, one transaction per batch (the checkpoint: a message is done when its
``vector_model`` is set). The server's own patterns run on a worker thread with the
per-message budget (``gigi_memory.ingest.redactor``): a message over it is checkpointed without
vectors (counted in ``/memory status``), never embedded unmasked; rules that cannot be
applied give the batch back and fail the job. A message edited or deleted while its batch
was being embedded is skipped, never given stale vectors. When the embedder fails the batch gives its claim
back and the job raises, the job service retries it, and the scheduled run picks up
whatever is left; changing the model re-embeds the same way.

Embeddings always use ``billing="server"`` (never a member's own key). Source ``local``
(the default) uses only a keyless embedder inside Gigi; ``profile`` the server's or
tenant's embedding profile, which sends the redacted text to that provider.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from gigi_memory import EMBED_JOBS, tables
from gigi_memory.embedding import pending, segments
from gigi_memory.ingest.redactor import Redactor
from gigi_memory.ingest.text import cut_query, redact_query

if TYPE_CHECKING:
    from gigi_memory.service import MemoryService

log = logging.getLogger("gigi_memory")

JOB = "memory.embed"
JOB_SCHEDULE = "*/10 * * * *"  # catches up whatever a failed or missed run left
BATCH_MESSAGES = 128
HELPER_HOPS = 3  # a helper job landing on a process that embeds the guild already re-queues
HOP_SECONDS = 0.2
RUN_SECONDS = 240.0  # then a follow-up run continues (the job's timeout is longer)
QUERY_CACHE = 256
m = tables.messages


def _answered_key(embedder: Embedder, reply: Any) -> str:
    """The model key the vectors are stored under: the model Gigi asked for (with a fallback
    that answered, ``kernel.llm`` says it was the fallback), never the provider's own name
    for it (an alias, a version suffix): stored under that, the rows never matched the
    guild's key and the job re-embedded them without end."""
    asked = getattr(reply, "requested_model", None)
    if asked is None or asked == embedder.model:
        return embedder.key
    return f"{reply.provider}:{asked}"


class UsageNotRecorded(Exception):
    """A search query's embedding ran but its usage row could not be written."""


@dataclass
class QueryEmbedding:
    """A query's ``(model key, vector)`` or ``None``, and the commit of its usage row."""

    vector: tuple[str, Any] | None
    usage: asyncio.Future[Any] | None = None

    async def recorded(self) -> None:
        """Wait for the usage row (already in flight); raise ``UsageNotRecorded`` if it failed."""
        if self.usage is None:
            return
        try:
            await asyncio.shield(self.usage)
        except Exception as exc:
            log.error("memory: a query embedding's usage row failed: %s", type(exc).__name__)
            raise UsageNotRecorded(type(exc).__name__) from exc


def _nothing(conn: Any) -> None:
    """The write that carries a query embedding's attached usage row (and nothing else)."""


class EmbedderUnavailable(Exception):
    """The embedder failed for a batch: the job retries it (by class, no provider text)."""

    def __init__(self, provider: str, error: str) -> None:
        super().__init__(f"embedding with {provider!r} failed ({error}); retried later")


@dataclass(frozen=True)
class Embedder:
    """Which model embeds a guild's messages. ``key`` is what rows store as the model."""

    provider: str
    model: str
    direct: bool = False  # a keyless provider called directly: a profile exists but source=local

    @property
    def key(self) -> str:
        return f"{self.provider}:{self.model}"


KICK_SECONDS = 1.0  # the embedding job is queued at most this often while messages arrive
CLOSE_SECONDS = 5.0  # how long closing waits to queue the last kick


@dataclass
class VectorService:
    """Per kernel: the job kicker and a small cache of query vectors (process memory only)."""

    service: MemoryService
    pending: set[str] = field(default_factory=set)
    _task: asyncio.Task[None] | None = None
    _last_defer: float = float("-inf")  # monotonic
    _hurry: asyncio.Event | None = None
    _queries: OrderedDict[tuple[str, str, str], Any] = field(default_factory=OrderedDict)
    generation: int = 0  # bumped whenever this process changes segments (the NumPy cache)
    running: set[str] = field(default_factory=set)  # guilds an embedding loop here works on
    again: set[str] = field(default_factory=set)  # a job stepped aside: the loop looks again
    _redactor: Redactor | None = None

    @property
    def redactor(self) -> Redactor:
        """The embedding job's own redaction thread (ingest's is never queued behind a batch
        of 128), counting into the per-server stats ``/memory status`` shows."""
        if self._redactor is None:
            self._redactor = Redactor(stats=self.service.writer.redactor.stats)
        return self._redactor

    # -- asking for the job ----------------------------------------------------------------

    def kick(self, guild_ids: set[str] | tuple[()]) -> None:
        """Queue ``memory.embed`` for these guilds soon (one queued job per guild)."""
        cache = self.service.cache
        wanted = {g for g in guild_ids if cache.guild(g).embeddings != "off"}
        if not wanted:
            return
        self.pending |= wanted
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._defer(), name="gigi-memory-embed-kick"
            )

    async def _defer(self) -> None:
        """At most one round of ``jobs.defer`` a ``KICK_SECONDS``: a queued job reads every
        message not embedded yet when it runs, so commits in between need no job of their own
        (deferring after each commit cost the writer a third of its time on PostgreSQL)."""
        jobs = self.service.kernel.jobs
        while self.pending:
            wait = self._last_defer + KICK_SECONDS - time.monotonic()
            if wait > 0:
                hurry = self._hurry = self._hurry or asyncio.Event()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait):
                        await hurry.wait()
                hurry.clear()
            self._last_defer = time.monotonic()
            guilds, self.pending = sorted(self.pending), set()
            for guild in guilds:
                try:
                    await jobs.defer(JOB, {"guild_id": guild}, key=f"embed:{guild}")
                except Exception as exc:  # the scheduled run catches up
                    log.warning("memory: could not queue the embedding job: %s", type(exc).__name__)

    async def flush(self) -> None:
        """Wait until every kick so far has been turned into a queued job (tests, shutdown)."""
        while self._task is not None and not self._task.done():
            if self._hurry is not None:
                self._hurry.set()
            await asyncio.shield(self._task)

    async def close(self) -> None:
        """Queue what is still kicked (a ``gigi memory import`` exits right after its last
        commit: cancelling would leave its messages unembedded until the hourly run), then
        stop. The database being away does not hold the close up for long."""
        if self._task is not None and not self._task.done():
            with contextlib.suppress(Exception, TimeoutError):
                async with asyncio.timeout(CLOSE_SECONDS):
                    await self.flush()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        if self._redactor is not None:
            self._redactor.close()

    # -- the source ------------------------------------------------------------------------

    async def embedder(self, guild_id: str) -> Embedder | None:
        """The guild's embedder now, or None (embeddings off, or nothing can embed)."""
        policy = self.service.cache.guild(guild_id)
        source = policy.embeddings
        if source == "off" or not policy.enabled:
            return None
        llm = self.service.kernel.llm
        try:
            res = await llm.resolve(guild_id, "embedding", None, billing="server")
        except Exception:  # NothingToResolve, or a store hiccup: full text only for now
            res = None
        if res is not None and (source == "profile" or getattr(res, "keyless", False)):
            return Embedder(res.provider, res.model)
        if source == "profile":
            return None
        keyless = getattr(llm, "keyless_providers", lambda: ())()
        for provider in sorted(keyless, key=lambda p: p.name):
            model = provider.default_models.get("embedding")
            if model and provider.supports.embeddings:
                return Embedder(provider.name, model, direct=True)
        return None

    async def embed(
        self,
        embedder: Embedder,
        guild_id: str,
        texts: list[str],
        actor: Any = None,
        durability: str | None = None,
    ) -> tuple[str, list[Any]]:
        """(model key, unit vectors) for ``texts``; the key is what the provider answered.
        ``durability`` is the usage row's (``gigi_core.llm``'s caller): committed first by
        default."""
        llm = self.service.kernel.llm
        if embedder.direct:
            from gigi_core.llm import EmbeddingRequest

            reply = await llm.provider(embedder.provider).embed(
                EmbeddingRequest(model=embedder.model, inputs=texts, purpose="document"),
                api_key="",
            )
        else:
            reply = await llm.embed(
                texts, guild_id=guild_id, actor=actor, billing="server", durability=durability
            )
        if len(reply.vectors) != len(texts):
            raise ValueError("the embedder returned a different number of vectors")
        return _answered_key(embedder, reply), segments.normalised_all(reply.vectors)

    async def query_vector(self, guild_id: str, query: str, actor: Any = None) -> QueryEmbedding:
        """A search query's ``(model key, vector)`` (``None`` when there is no embedder or it
        fails) and its usage row's commit, which the search awaits when its own work is done.

        Kept in a small in-process cache so a search embeds once before it opens a connection.
        The usage row (metadata only) is committed beside the search, not before it (a commit
        per query would be most of the embedding's wait on PostgreSQL), and not left behind
        it either: ``QueryEmbedding.recorded`` raises when it failed (the turn
        reports a failed usage write, nothing is silently dropped).
        """
        embedder = await self.embedder(guild_id)
        if embedder is None:
            return QueryEmbedding(None)
        query = cut_query(query)  # redacted on the loop, below: its cost is bounded by length
        cache_key = (guild_id, embedder.key, query)
        hit = self._queries.get(cache_key)
        if hit is not None:
            self._queries.move_to_end(cache_key)
            return QueryEmbedding(hit)
        text = redact_query(query, self.service.cache.guild(guild_id).redaction)[0]
        try:
            # ``turn``: the kernel attaches the usage row to the next write from this task;
            # that write is queued at once below (the row alone, committed while the search
            # runs), and its future is what ``recorded`` awaits.
            key, (vector,) = await self.embed(embedder, guild_id, [text], actor, "turn")
        except Exception as exc:  # search goes on with full text only
            log.warning("memory: query embedding failed: %s", type(exc).__name__)
            return QueryEmbedding(None, self._record_usage(embedder))
        recorded = self._record_usage(embedder)
        if not vector.any():
            return QueryEmbedding(None, recorded)
        self._queries[cache_key] = (key, vector)
        while len(self._queries) > QUERY_CACHE:
            self._queries.popitem(last=False)
        return QueryEmbedding((key, vector), recorded)

    def _record_usage(self, embedder: Embedder) -> asyncio.Future[Any] | None:
        """Queue the write that carries this task's attached usage row; None when a direct
        (keyless, unmetered) embedder made no row."""
        if embedder.direct:
            return None
        landed = self.service.kernel.db.writer.submit(_nothing)
        if landed is None:  # the database is closed: the row cannot land
            landed = asyncio.get_running_loop().create_future()
            landed.set_exception(RuntimeError("the database is closed"))
        return landed

    # -- status ----------------------------------------------------------------------------

    async def lag(self, guild_id: str) -> dict[str, Any]:
        """Messages with text but no vectors of the current model (the job's backlog)."""
        embedder = await self.embedder(guild_id)
        if embedder is None:
            source = self.service.cache.guild(guild_id).embeddings
            return {"source": source, "model": None, "messages_without_vectors": None}
        async with self.service.engine.connect() as conn:
            n = await conn.scalar(
                sa.select(sa.func.count()).select_from(m).where(_stale(guild_id, embedder.key))
            )
        return {"source": embedder.provider, "model": embedder.key, "messages_without_vectors": n}


def _stale(guild_id: str, key: str) -> Any:
    return sa.and_(
        m.c.guild_id == guild_id,
        m.c.deleted_ms.is_(None),
        m.c.search_text.is_not(None),
        sa.or_(m.c.vector_model.is_(None), m.c.vector_model != key),
    )


# -- the job -------------------------------------------------------------------------------------


async def embed_job(ctx: Any, guild_id: str | None = None) -> dict[str, Any]:
    """Embed what is not embedded yet, for one guild (deferred) or all (the schedule)."""
    from gigi_memory.service import service_of

    svc = service_of(ctx.kernel)
    if not svc.cache.loaded:
        await svc.start()
    guilds = [guild_id] if guild_id else sorted(set(svc.cache.guilds) | set(svc.cache.channels))
    totals = {"messages": 0, "segments": 0, "skipped": 0, "not_embedded": 0}
    for guild in guilds:
        done = await _embed_guild(ctx, svc, guild)
        for k in totals:
            totals[k] += done.get(k, 0)
    return totals


def _lease_seconds(ctx: Any) -> float:
    """A claim lasts as long as a job may go without a heartbeat before another worker
    takes it over: a dead worker's batch is free again when its job would be."""
    settings = getattr(ctx.kernel.jobs, "settings", None)
    return max(1.0, float(getattr(settings, "stall_seconds", 30.0)))


async def _embed_guild(ctx: Any, svc: MemoryService, guild_id: str) -> dict[str, int]:
    vec = svc.vectors
    if guild_id in vec.running:  # this process embeds the guild already: one loop per process
        await _hand_on(ctx, svc, guild_id)
        return {}
    vec.running.add(guild_id)  # before any await: a second job here steps aside
    try:
        embedder = await vec.embedder(guild_id)
        if embedder is None:
            return {}
        out, more = await _embed_loop(ctx, svc, embedder, guild_id)
    finally:
        vec.running.discard(guild_id)
        vec.again.discard(guild_id)
    if more:  # queued once this loop is off the guild, so the next run here does not step aside
        await _defer(ctx, guild_id)
    return out


async def _embed_loop(
    ctx: Any, svc: MemoryService, embedder: Embedder, guild_id: str
) -> tuple[dict[str, int], bool]:
    """Claim, embed and write batches until none is left: (totals, whether to run again)."""
    lease = _lease_seconds(ctx)
    started = time.monotonic()
    out, fanned = {"messages": 0, "segments": 0, "skipped": 0, "not_embedded": 0}, False
    while not ctx.cancelled:
        batch = await pending.claim(
            svc.engine, svc.dialect, guild_id, embedder.key, BATCH_MESSAGES, lease
        )
        if not batch.rows:
            # Rows other batches hold: if their worker died, a run after the lease takes them.
            wait = await pending.next_free_ms(
                svc.engine, svc.dialect, guild_id, embedder.key, lease
            )
            if wait is not None:
                await _defer(ctx, guild_id, "later", seconds=wait / 1000 + 0.05)
            if guild_id in svc.vectors.again:  # a job stepped aside meanwhile: look once more
                svc.vectors.again.discard(guild_id)
                continue
            break  # no await from the check until ``running`` is cleared: no wake-up is lost
        if not fanned and len(batch.rows) == BATCH_MESSAGES:
            fanned = True  # a backlog: ask other workers to help (each claims its own rows)
            await _fan_out(ctx, svc, guild_id)
        wrote = await _embed_batch(svc, embedder, guild_id, batch)
        for k, v in wrote.items():
            out[k] += v
        if not wrote["messages"] + wrote["not_embedded"]:  # all edited or deleted meanwhile
            if guild_id in svc.vectors.again:
                svc.vectors.again.discard(guild_id)
                continue
            break
        await ctx.progress(out["messages"], None, f"{out['messages']} message(s) embedded")
        if time.monotonic() - started > RUN_SECONDS:  # let other jobs run; continue later
            return out, True
    return out, False


async def _defer(ctx: Any, guild_id: str, part: str | None = None, seconds: float = 0.0) -> None:
    from datetime import UTC, datetime, timedelta

    key = f"embed:{guild_id}" if part is None else f"embed:{guild_id}:{part}"
    run_at = datetime.now(UTC) + timedelta(seconds=seconds) if seconds else None
    await ctx.kernel.jobs.defer(JOB, {"guild_id": guild_id}, key=key, run_at=run_at)


async def _fan_out(ctx: Any, svc: MemoryService, guild_id: str) -> None:
    """Queue helper jobs (one queued per key) that other worker processes pick up.

    SQLite has one process and one writer: helpers would add nothing there.
    """
    if svc.dialect != "postgresql" or _helper(ctx.key, guild_id) is not None:
        return
    for n in range(1, EMBED_JOBS):
        await _defer(ctx, guild_id, f"+{n}.0")


def _helper(key: str | None, guild_id: str) -> tuple[int, int] | None:
    """(helper number, hop) of a helper job's key ``embed:{guild}:+{n}.{hop}``, else None."""
    prefix = f"embed:{guild_id}:+"
    if not key or not key.startswith(prefix):
        return None
    n, _, hop = key[len(prefix) :].partition(".")
    return (int(n), int(hop)) if n.isdigit() and hop.isdigit() else None


async def _hand_on(ctx: Any, svc: MemoryService, guild_id: str) -> None:
    """A second job for a guild this process embeds already adds nothing here: a helper
    goes back to the queue a few times, for another process to take; others just end
    (the running loop claims whatever they were queued for)."""
    svc.vectors.again.add(guild_id)  # the running loop claims once more before it ends
    helper = _helper(ctx.key, guild_id)
    if helper is not None and helper[1] < HELPER_HOPS:
        await _defer(ctx, guild_id, f"+{helper[0]}.{helper[1] + 1}", seconds=HOP_SECONDS)


async def _embed_batch(
    svc: MemoryService, embedder: Embedder, guild_id: str, batch: pending.Claim
) -> dict[str, int]:
    rules = svc.cache.guild(guild_id).redaction
    raw = [svc.unseal(row) or row.search_text or "" for row in batch.rows]
    try:  # the rules may have grown since the rows were written; off the loop, budgeted
        masked, later = await svc.vectors.redactor.redact_to_embed(guild_id, raw, rules)
    except Exception:  # rules that cannot be applied: nothing is embedded, the job fails
        with contextlib.suppress(Exception):
            await pending.release(svc.engine, svc.dialect, batch)
        raise
    if later:  # not reached behind slow ones: given back, the next batch starts with them
        rows = [batch.rows[i] for i in later]
        await pending.release(svc.engine, svc.dialect, pending.Claim(batch.token, rows))
        keep = set(range(len(batch.rows))) - set(later)
        batch = pending.Claim(batch.token, [batch.rows[i] for i in sorted(keep)])
        masked = [masked[i] for i in sorted(keep)]
    texts: list[str] = []
    spans_of: list[list[segments.Span]] = []
    for text in masked:  # None: over the budget, checkpointed below without vectors
        spans = segments.chunk(text) if text is not None else []
        spans_of.append(spans)
        texts.extend(text[sp.start : sp.end] for sp in spans if text is not None)
    key, vectors = (embedder.key, [])
    if texts:
        try:
            key, vectors = await svc.vectors.embed(embedder, guild_id, texts)
        except Exception as exc:  # the job is retried with backoff; the messages wait
            with contextlib.suppress(Exception):
                await pending.release(svc.engine, svc.dialect, batch)
            raise EmbedderUnavailable(embedder.provider, type(exc).__name__) from exc
    plan, i = [], 0
    for row, spans in zip(batch.rows, spans_of, strict=True):
        plan.append(
            pending.Planned(row, list(zip(spans, vectors[i : i + len(spans)], strict=True)))
        )
        i += len(spans)
    marked, written = await pending.write(svc.engine, svc.dialect, guild_id, batch, key, plan)
    svc.vectors.generation += 1
    if marked:  # marking rows embedded re-indexes their words (not a HOT update): merge later
        svc.store.note_written()
        svc.writer.wake()
    withheld = sum(text is None for text in masked)
    return {
        "messages": max(0, marked - withheld),
        "segments": written,
        "skipped": len(plan) - marked,
        "not_embedded": withheld,
    }
