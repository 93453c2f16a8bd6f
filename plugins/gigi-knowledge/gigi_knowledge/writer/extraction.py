"""Writing one validated extraction: entities (deduplicated), relationships (counted),
decisions, actions, signals and their vectors, planned under the guild lock and handed to
the service's ``Batcher``, which commits many extractions in one transaction.

Everything model-made is checked here before it is stored: confidence at least the floor,
cited message ids inside the window and including the message processed (an item citing
none of them, or only earlier messages, is dropped), member ids
only those seen in the window (a claim to act for others stays the author's claim), and
no run of a message's words (``VerbatimGuard``).
"""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from gigi_knowledge import tables, vectors
from gigi_knowledge.extract.verbatim import VerbatimGuard, trimmed
from gigi_knowledge.ingest.window import WindowMessage
from gigi_knowledge.source_refs import cited, source_ref
from gigi_knowledge.writer import dedup
from gigi_knowledge.writer.plan import Op, apply_ops

DAY_MS = 86_400_000
ALIAS_LIMIT = 120
E, R, D, A, S, V = (
    tables.entities,
    tables.relationships,
    tables.decisions,
    tables.actions,
    tables.signals,
    tables.embeddings,
)
_locks: dict[tuple[int, str], asyncio.Lock] = {}


def norm(name: str) -> str:
    return " ".join(name.lower().split())


def new_id() -> str:
    return str(uuid.uuid4())


def guild_lock(svc: Any, guild_id: str) -> asyncio.Lock:
    """Writes of one guild in this process one at a time (entity dedup must see the last)."""
    key = (id(svc), guild_id)
    lock = _locks.get(key)
    if lock is None:
        lock = _locks[key] = asyncio.Lock()
    return lock


@dataclass
class Written:
    decisions: list[str] = field(default_factory=list)
    decision_vectors: list[Any] = field(default_factory=list)  # caches.KnownDecision
    actions: list[str] = field(default_factory=list)
    entities_new: int = 0
    entities_merged: int = 0
    relationships: int = 0
    signals: int = 0
    dropped: int = 0


@dataclass
class Context:
    guild_id: str
    channel_id: str
    window: Sequence[WindowMessage]
    model: str | None
    now_ms: int
    floor: float
    dedup: float
    staleness_days: int
    focus: str | None = None
    guard: VerbatimGuard = field(init=False)
    members: set[str] = field(init=False)

    def __post_init__(self) -> None:
        self.guard = VerbatimGuard(m.text for m in self.window)
        self.members = {m.author_id for m in self.window} | {
            u for m in self.window for u in m.mentions
        }

    def refs(self, ids: Sequence[str]) -> list[WindowMessage]:
        return cited(self.window, ids)

    def clean(self, values: Sequence[str], limit: int = 40) -> list[str]:
        out: list[str] = []
        for v in values:
            v = " ".join(v.split())[:limit]
            if v and v not in out and not self.guard.copies(v):
                out.append(v)
        return out

    def trim(self, item: Any, core: str, **extras: Any) -> Any:
        """``item`` with its optional fields as they will be stored (``verbatim.trimmed``)."""
        cleaned = {
            k: self.clean(v, ALIAS_LIMIT if k == "aliases" else 40)
            if isinstance(v, list)
            else (None if self.guard.copies(v) else v)
            for k, v in extras.items()
        }
        return trimmed(self.guard, item, core, cleaned)


def _vector_row(
    ctx: Context, kind: str, source_id: str, model: str, vec: Any, row: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    return {
        "id": new_id(),
        "guild_id": ctx.guild_id,
        "source_type": kind,
        "source_id": source_id,
        "channel_id": ctx.channel_id,
        "author_id": (row.get("asserted_by") or row.get("participants") or [None])[0],
        "created_ms": row.get("decided_ms") or row.get("occurred_ms") or ctx.now_ms,
        "topic_tags": row.get("tags") or [],
        "model": model,
        "dims": int(vec.shape[0]),
        "vector": vectors.encode(vec),
        **extra,
    }


def _deadline(value: str | None) -> int | None:
    if not value:
        return None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        from datetime import UTC

        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)


async def write_extraction(svc: Any, ctx: Context, extraction: Any) -> Written:
    out = Written(dropped=sum(extraction.dropped.values()))
    floor = ctx.floor

    def keep(item: Any, *texts: str | None) -> list[WindowMessage] | None:
        msgs = ctx.refs(item.message_ids)
        # An item must rest on the message being processed: what only earlier messages
        # say was extracted (or not) when they went through, so windows never double up.
        cites_focus = ctx.focus is None or ctx.focus in item.message_ids
        if (
            item.confidence < floor
            or not msgs
            or not cites_focus
            or any(ctx.guard.copies(t) for t in texts)
        ):
            out.dropped += 1
            return None
        return msgs

    decisions, actions, signals, ents, rels = [], [], [], [], []
    for d in extraction.items["decisions"]:
        if (msgs := keep(d, d.summary)) is not None:
            decisions.append((d, msgs))
    for a in extraction.items["actions"]:
        if (msgs := keep(a, a.description)) is not None:
            actions.append((a, msgs))
    for sig in extraction.items["signals"]:
        if (msgs := keep(sig, sig.summary)) is not None:
            signals.append((sig, msgs))
    for e in extraction.items["entities"]:
        if (msgs := keep(e, e.name)) is not None:
            ents.append((e, msgs))
    for r in extraction.items["relationships"]:
        if (msgs := keep(r, r.context)) is not None:
            rels.append((r, msgs))
    # Each row as stored, checked as one text: its optional fields go when together with
    # the rest they copy a message (a run split over the summary and its tags).
    decisions = [
        (ctx.trim(d, "summary", rationale=d.rationale, tags=d.tags), m) for d, m in decisions
    ]
    actions = [
        (ctx.trim(a, "description", owner_name=a.owner_name, tags=a.tags), m) for a, m in actions
    ]
    signals = [(ctx.trim(sig, "summary", tags=sig.tags), m) for sig, m in signals]
    ents = [(ctx.trim(e, "name", aliases=e.aliases), m) for e, m in ents]
    rels = [(ctx.trim(r, "relationship", context=r.context), m) for r, m in rels]

    # Tier 3 texts, embedded before any connection is taken; the texts go out of scope here.
    texts = [d.summary + (f" — {d.rationale}" if d.rationale else "") for d, _ in decisions]
    texts += [sig.summary for sig, _ in signals]
    texts += [e.name for e, _ in ents]
    emb = await vectors.embed(svc.kernel, ctx.guild_id, texts) if texts else None
    model, vecs = emb if emb else (None, [])
    dvecs = vecs[: len(decisions)]
    svecs = vecs[len(decisions) : len(decisions) + len(signals)]
    evecs = vecs[len(decisions) + len(signals) :]

    from gigi_knowledge.writer.caches import KnownDecision

    ops: list[Op] = []
    async with guild_lock(svc, ctx.guild_id):
        try:
            by_type = svc.caches.peek_entities(ctx.guild_id)
            if by_type is None:
                await svc.notes.flush()  # this process's pending entities reach the store first
                async with svc.engine.connect() as conn:
                    by_type = await svc.caches.guild_entities(conn, ctx.guild_id)
            names = _entities(by_type, ctx, ents, evecs, model, out, ops)
            _plan(
                ctx,
                out,
                ops,
                by_type,
                names,
                rels,
                decisions,
                dvecs,
                model,
                actions,
                signals,
                svecs,
                KnownDecision,
            )
        except BaseException:
            svc.caches.forget(ctx.guild_id)  # the cache may hold what was never queued
            raise
        svc.notes.add_unit(ctx.guild_id, functools.partial(apply_ops, svc, ctx.guild_id, ops))
    for d in out.decision_vectors:
        svc.caches.add_decision(ctx.guild_id, ctx.channel_id, d)
    return out


def name_key(name: str) -> str:
    """The normalised name the unique index (guild, type, name_key) holds."""
    return dedup.key_of(name)


def _plan(
    ctx: Context,
    out: Written,
    ops: list[Op],
    by_type: dict[str, list[Any]],
    names: dict[str, str],
    rels: list[Any],
    decisions: list[Any],
    dvecs: list[Any],
    model: Any,
    actions: list[Any],
    signals: list[Any],
    svecs: list[Any],
    KnownDecision: Any,
) -> None:
    batch: dict[sa.Table, list[dict[str, Any]]] = {D: [], A: [], S: [], V: []}
    for r, msgs in rels:
        src, dst = names.get(norm(r.source)), names.get(norm(r.target))
        if src is None:
            src = _find_entity(by_type, r.source)
        if dst is None:
            dst = _find_entity(by_type, r.target)
        if src is None or dst is None or src == dst:
            out.dropped += 1
            continue
        ops.append(
            (
                "rel",
                {
                    "id": new_id(),
                    "guild_id": ctx.guild_id,
                    "channel_id": ctx.channel_id,
                    "source_id": src,
                    "target_id": dst,
                    "relationship": r.relationship,
                    "context": r.context,
                    "confidence": r.confidence,
                    "first_observed_ms": ctx.now_ms,
                    "last_observed_ms": ctx.now_ms,
                    "observation_count": 1,
                    "source_ref": source_ref(msgs),
                    "extraction_model": ctx.model,
                },
            )
        )
        out.relationships += 1
    for i, (d, msgs) in enumerate(decisions):
        authors = sorted({m.author_id for m in msgs})
        decided = [x for x in dict.fromkeys(d.decided_by) if x in ctx.members] or authors
        row = {
            "id": new_id(),
            "guild_id": ctx.guild_id,
            "channel_id": ctx.channel_id,
            "summary": d.summary,
            "rationale": None if ctx.guard.copies(d.rationale) else d.rationale,
            "decided_by": decided,
            "asserted_by": authors,
            "decided_ms": max(m.created_ms for m in msgs),
            "confidence": d.confidence,
            "status": "active",
            "superseded_by": None,
            "tags": ctx.clean(d.tags),
            "source_ref": source_ref(msgs),
            "extraction_model": ctx.model,
            "created_ms": ctx.now_ms,
        }
        batch[D].append(row)
        if i < len(dvecs):
            batch[V].append(_vector_row(ctx, "decision", row["id"], model, dvecs[i], row))
            out.decision_vectors.append(
                KnownDecision(row["id"], row["summary"], row["decided_ms"], dvecs[i], model)
            )
        out.decisions.append(row["id"])
    for a, msgs in actions:
        deadline = _deadline(a.deadline)
        owner = a.owner_id if a.owner_id in ctx.members else None
        owner_name = a.owner_name if a.owner_name and not ctx.guard.copies(a.owner_name) else None
        row = {
            "id": new_id(),
            "guild_id": ctx.guild_id,
            "channel_id": ctx.channel_id,
            "description": a.description,
            "owner_id": owner,
            "owner_name": owner_name,
            "deadline_ms": deadline,
            "status": "open",
            "staleness_ms": deadline or ctx.now_ms + ctx.staleness_days * DAY_MS,
            "confidence": a.confidence,
            "tags": ctx.clean(a.tags),
            "source_ref": source_ref(msgs),
            "related_decision": out.decisions[0] if out.decisions else None,
            "asserted_by": sorted({m.author_id for m in msgs}),
            "extraction_model": ctx.model,
            "created_ms": ctx.now_ms,
            "last_status_check_ms": None,
            "nudged_ms": None,
        }
        batch[A].append(row)
        out.actions.append(row["id"])
    for i, (sig, msgs) in enumerate(signals):
        row = {
            "id": new_id(),
            "guild_id": ctx.guild_id,
            "channel_id": ctx.channel_id,
            "signal_type": sig.type,
            "summary": sig.summary,
            "participants": sorted(
                {x for x in sig.participants if x in ctx.members} | {m.author_id for m in msgs}
            ),
            "tags": ctx.clean(sig.tags),
            "related_entities": [],
            "occurred_ms": max(m.created_ms for m in msgs),
            "confidence": sig.confidence,
            "source_ref": source_ref(msgs),
            "extraction_model": ctx.model,
            "created_ms": ctx.now_ms,
        }
        batch[S].append(row)
        if i < len(svecs):
            batch[V].append(_vector_row(ctx, "signal", row["id"], model, svecs[i], row))
        out.signals += 1
    for table in (D, A, S, V):
        ops.append(("rows", table, batch[table]))


def _entities(
    by_type: dict[str, list[Any]],
    ctx: Context,
    ents: list[Any],
    evecs: list[Any],
    model: str | None,
    out: Written,
    ops: list[Op],
) -> dict[str, str]:
    """Dedup: same guild and type, an alias/name match or cosine ≥
    the threshold → update the existing entity; otherwise insert it with its vector. The
    cache is written through here, so the next extraction sees it before it is stored."""
    from gigi_knowledge.writer.caches import KnownEntity

    names: dict[str, str] = {}
    for i, (e, msgs) in enumerate(ents):
        vec = evecs[i] if i < len(evecs) else None
        aliases = ctx.clean(e.aliases, ALIAS_LIMIT)
        keys = {norm(e.name), *(norm(a) for a in aliases)}
        rows = by_type.setdefault(e.type, [])
        match = next(
            (r for r in rows if keys & ({norm(r.name)} | {norm(a) for a in r.aliases})), None
        )
        if match is None and vec is not None:
            best, score = None, -1.0
            for r in rows:
                if r.vec is not None and r.model == model and r.vec.shape == vec.shape:
                    sim = float(vec @ r.vec)
                    if sim > score:
                        best, score = r, sim
            if best is not None and score >= ctx.dedup:
                match = best
        user = e.member_id if e.type == "person" and e.member_id in ctx.members else None
        if match is not None:
            gained: list[str] = []
            for alias in [" ".join(e.name.split()), *aliases]:
                if norm(alias) != norm(match.name) and norm(alias) not in {
                    norm(k) for k in [*match.aliases, *gained]
                }:
                    gained.append(alias)
            # The stored row gains them: its name and aliases together must not copy either.
            if gained and ctx.guard.copies_row(match.name, match.aliases, gained):
                gained = []
            match.aliases.extend(gained)
            values: dict[str, Any] = {
                "mention_count": E.c.mention_count + 1,
                "last_mentioned_ms": ctx.now_ms,
            }
            if user:
                values["user_id"] = user
            # The aliases it gained are merged with the stored ones when applied (ops).
            ops.append(("touch", match.id, values, e.type, gained))
            names.update({k: match.id for k in keys})
            out.entities_merged += 1
            continue
        eid = new_id()
        name = " ".join(e.name.split())
        kept_aliases = [a for a in aliases if norm(a) != norm(name)]
        row = {
            "id": eid,
            "guild_id": ctx.guild_id,
            "channel_id": ctx.channel_id,
            "entity_type": e.type,
            "name": name,
            "name_key": name_key(name),
            "aliases": kept_aliases,
            "user_id": user,
            "meta": {},
            "first_seen_ms": ctx.now_ms,
            "last_mentioned_ms": ctx.now_ms,
            "mention_count": 1,
            "deleted": False,
            "source_ref": source_ref(msgs),
            "extraction_model": ctx.model,
        }
        vrow = None
        if vec is not None and model:
            vref = {"participants": [msgs[0].author_id], "occurred_ms": ctx.now_ms}
            vrow = _vector_row(ctx, "entity", eid, model, vec, vref, entity_type=e.type)
        ops.append(("entity", row, vrow, [name, *kept_aliases], ctx.dedup))
        names.update({k: eid for k in keys})
        rows.append(KnownEntity(eid, name, kept_aliases, e.type, vec, model))
        out.entities_new += 1
    return names


def _find_entity(by_type: dict[str, list[Any]], name: str) -> str | None:
    """An existing entity of the guild by name or alias (any type), for relationships."""
    key = norm(name)
    for rows in by_type.values():
        for row in rows:
            if key == norm(row.name) or key in {norm(a) for a in row.aliases}:
                return row.id
    return None
