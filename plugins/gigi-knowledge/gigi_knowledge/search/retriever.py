"""Knowledge as retrieval paths of the kernel's engine (``gigi_core.retrieval``):
structured SQL, semantic (the knowledge vectors), the entity graph (BFS over relationships,
depth ≤ 3) and summaries, fused here into one list of ``Hit``s.

Scope: only rows of ``scope.channel_ids`` (the channels the asker may view now). In personal
mode (``scope.user_id``, a DM) also the asker's own decisions and actions in the channels
they may read now (``kernel.outbox.member``; none when no surface here can tell), as hits
with no channel and the asker as ``user_id``.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gigi_core.retrieval import Hit, Scope

from gigi_knowledge import phrasing
from gigi_knowledge.search.pgsearch import nearest as _pg_nearest

PREFIX = "knowledge:"
MAX_DEPTH = 3
_WORD = re.compile(r"\w{3,}", re.UNICODE)


def _ms(when: datetime | None) -> int | None:
    return None if when is None else int(when.timestamp() * 1000)


def _dt(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


class KnowledgeRetriever:
    name = "knowledge"
    paths = ("structured", "semantic", "graph", "summary")
    capability = "knowledge.read"
    source = "knowledge"
    plugin = "knowledge"
    # Answer notes, read by the kernel's context broker (docs/retrieval.md "Answer notes"):
    answer_notes = phrasing.ANSWER_NOTES  # in the pack when a knowledge item is in it
    no_record = phrasing.NO_RECORD  # the reply, by code, when a knowledge question finds nothing

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def retrieve(self, query: str, scope: Scope, limit: int) -> list[Hit]:
        from gigi_knowledge.service import ready

        svc = await ready(self.kernel)
        channels = sorted(scope.channel_ids)
        found: dict[str, tuple[Hit, list[str], float]] = {}

        def add(hits: list[tuple[Hit, float]], path: str) -> None:
            for hit, score in hits:
                prev = found.get(hit.source_id)
                if prev is None:
                    found[hit.source_id] = (hit, [path], score)
                else:
                    prev[1].append(path)
                    found[hit.source_id] = (prev[0], prev[1], max(prev[2], score))

        if channels:
            add(await self._structured(svc, query, scope, channels, limit), "structured")
            add(await self._semantic(svc, query, scope, channels, limit), "semantic")
            add(await self._graph(svc, query, scope, channels, limit), "graph")
            add(await self._summaries(svc, query, scope, channels), "summary")
        if scope.user_id:
            add(await self._personal(svc, query, scope, limit), "structured")
        ranked = sorted(
            found.values(), key=lambda t: (-(t[2] * (1.5 if len(t[1]) > 1 else 1)), t[0].source_id)
        )
        from dataclasses import replace

        return [replace(h, paths=tuple(p)) for h, p, _ in ranked[:limit]]

    async def lookup(self, source_ids: Sequence[str], scope: Scope) -> list[Hit]:
        """Re-read earlier hits: gone, superseded or now out of scope shows."""
        import sqlalchemy as sa

        from gigi_knowledge import tables
        from gigi_knowledge.service import ready

        svc = await ready(self.kernel)
        by_kind: dict[str, list[str]] = {}
        for sid in source_ids:
            parts = sid.split(":")
            if len(parts) == 3 and parts[0] + ":" == PREFIX:
                by_kind.setdefault(parts[1], []).append(parts[2])
        out: list[Hit] = []
        async with svc.engine.connect() as conn:
            if ids := by_kind.get("decision"):
                d = tables.decisions
                rows = await conn.execute(
                    sa.select(d).where(d.c.guild_id == scope.guild_id, d.c.id.in_(ids))
                )
                out += [self._decision(r, scope) for r in rows]
            if ids := by_kind.get("action"):
                a = tables.actions
                rows = await conn.execute(
                    sa.select(a).where(a.c.guild_id == scope.guild_id, a.c.id.in_(ids))
                )
                out += [self._action(r, scope) for r in rows]
        return [h for h in out if scope.admits(h)]

    # -- hits ------------------------------------------------------------------------------

    @staticmethod
    def _cite(channel_id: str, ms: int, row: Any = None) -> Any:
        """``<#channel> · date`` and, when the row cites messages, a jump link to the first
        (source_ref: ids, never content)."""
        from gigi_core.retrieval import Citation

        ref = getattr(row, "source_ref", None) or {}
        ids = ref.get("message_ids") if isinstance(ref, dict) else None
        url = (
            f"https://discord.com/channels/{row.guild_id}/{channel_id}/{ids[0]}"
            if ids and str(ids[0]).isdigit()
            else None
        )
        return Citation(f"<#{channel_id}> · {_dt(ms).date().isoformat()}", url)

    def _decision(self, r: Any, scope: Scope, personal: bool = False) -> Hit:
        """A decision's fields: summary, decided_by, decided_at, channel (the
        citation) and source_ref (how many messages, and the link)."""
        from gigi_core.retrieval import Hit

        who = ", ".join(x if " " in x else f"<@{x}>" for x in r.decided_by)
        text = f"Decision ({r.status}): {r.summary}" + (
            f" Why: {r.rationale}" if r.rationale else ""
        )
        text += f" Decided by {who}" if who else " Decided"
        n = len((r.source_ref or {}).get("message_ids") or [])
        text += f" on {_dt(r.decided_ms).date().isoformat()}" + (
            f", from {n} message(s)." if n else "."
        )
        return Hit(
            source_id=f"{PREFIX}decision:{r.id}",
            kind="decision",
            text=text,
            channel_id=None if personal else r.channel_id,
            user_id=scope.user_id if personal else None,
            timestamp=_dt(r.decided_ms),
            confidence=float(min(1.0, max(0.0, r.confidence))),
            citation=self._cite(r.channel_id, r.decided_ms, r),
            superseded=r.status != "active",
        )

    def _action(self, r: Any, scope: Scope, personal: bool = False) -> Hit:
        from gigi_core.retrieval import Hit

        owner = f"<@{r.owner_id}>" if r.owner_id else (r.owner_name or "no one named")
        due = f", due {_dt(r.deadline_ms).date().isoformat()}" if r.deadline_ms else ""
        return Hit(
            source_id=f"{PREFIX}action:{r.id}",
            kind="action",
            text=f"Action ({r.status}): {r.description} — owner {owner}{due}.",
            channel_id=None if personal else r.channel_id,
            user_id=scope.user_id if personal else None,
            timestamp=_dt(r.created_ms),
            confidence=float(min(1.0, max(0.0, r.confidence))),
            citation=self._cite(r.channel_id, r.created_ms, r),
        )

    # -- paths -----------------------------------------------------------------------------

    def _window(self, table: Any, column: Any, scope: Scope) -> list[Any]:
        where = [table.c.guild_id == scope.guild_id]
        if (s := _ms(scope.since)) is not None:
            where.append(column >= s)
        if (u := _ms(scope.until)) is not None:
            where.append(column <= u)
        return where

    async def _structured(
        self, svc: Any, query: str, scope: Scope, channels: list[str], limit: int
    ) -> list[tuple[Hit, float]]:
        import sqlalchemy as sa

        from gigi_knowledge import tables

        d, a = tables.decisions, tables.actions
        words = _words(query)
        mentioned = set(re.findall(r"<@!?(\d+)>", query))
        async with svc.engine.connect() as conn:
            drows = (
                await conn.execute(
                    sa.select(d)
                    .where(*self._window(d, d.c.decided_ms, scope), d.c.channel_id.in_(channels))
                    .order_by(d.c.decided_ms.desc())
                    .limit(200)
                )
            ).all()
            arows = (
                await conn.execute(
                    sa.select(a)
                    .where(*self._window(a, a.c.created_ms, scope), a.c.channel_id.in_(channels))
                    .order_by(a.c.created_ms.desc())
                    .limit(200)
                )
            ).all()
        out: list[tuple[Hit, float]] = []
        for r in drows:
            overlap = len(words & (_words(r.summary) | {t.lower() for t in r.tags}))
            if overlap or mentioned & set(r.decided_by):
                out.append(
                    (
                        self._decision(r, scope),
                        overlap + (2 if mentioned & set(r.decided_by) else 0),
                    )
                )
        for r in arows:
            overlap = len(words & (_words(r.description) | {t.lower() for t in r.tags}))
            owner_hit = r.owner_id in mentioned
            if (
                overlap
                or owner_hit
                or ({"action", "actions", "todo"} & words and r.status == "open")
            ):
                out.append((self._action(r, scope), overlap + (2 if owner_hit else 0) + 0.5))
        out.sort(key=lambda p: -p[1])
        return [(h, 1.0 / (i + 1)) for i, (h, _) in enumerate(out[:limit])]

    async def _semantic(
        self, svc: Any, query: str, scope: Scope, channels: list[str], limit: int
    ) -> list[tuple[Hit, float]]:
        import sqlalchemy as sa

        from gigi_core.retrieval import Hit
        from gigi_knowledge import tables, vectors

        emb = await vectors.embed(svc.kernel, scope.guild_id, [query])
        if emb is None:
            return []
        model, (qv,) = emb
        v, d, s = tables.embeddings, tables.decisions, tables.signals
        async with svc.engine.connect() as conn:
            if svc.dialect == "postgresql":
                best = await _pg_nearest(conn, scope, channels, model, qv, limit)
            else:
                rows = (
                    await conn.execute(
                        sa.select(v.c.source_type, v.c.source_id, v.c.vector)
                        .where(
                            *self._window(v, v.c.created_ms, scope),
                            v.c.channel_id.in_(channels),
                            v.c.model == model,
                            v.c.source_type.in_(("decision", "signal")),
                        )
                        .limit(20000)
                    )
                ).all()
                best = vectors.best(qv, list(rows), limit)
            best = [(sc, r) for sc, r in best if sc >= 0.3]
            ids = {"decision": [], "signal": []}
            for _, r in best:
                ids[r.source_type].append(r.source_id)
            drows = (
                {
                    r.id: r
                    for r in await conn.execute(sa.select(d).where(d.c.id.in_(ids["decision"])))
                }
                if ids["decision"]
                else {}
            )
            srows = (
                {r.id: r for r in await conn.execute(sa.select(s).where(s.c.id.in_(ids["signal"])))}
                if ids["signal"]
                else {}
            )
        out: list[tuple[Hit, float]] = []
        for score, r in best:
            if r.source_type == "decision" and r.source_id in drows:
                out.append((self._decision(drows[r.source_id], scope), score))
            elif r.source_id in srows:
                row = srows[r.source_id]
                out.append(
                    (
                        Hit(
                            source_id=f"{PREFIX}signal:{row.id}",
                            kind="signal",
                            text=f"Note ({row.signal_type}): {row.summary}",
                            channel_id=row.channel_id,
                            timestamp=_dt(row.occurred_ms),
                            confidence=float(min(1.0, max(0.0, row.confidence))),
                            citation=self._cite(row.channel_id, row.occurred_ms, row),
                        ),
                        score,
                    )
                )
        return out

    async def _graph(
        self, svc: Any, query: str, scope: Scope, channels: list[str], limit: int
    ) -> list[tuple[Hit, float]]:
        import sqlalchemy as sa

        from gigi_core.retrieval import Hit
        from gigi_knowledge import tables

        e, r = tables.entities, tables.relationships
        words = _words(query)
        if not words:
            return []
        async with svc.engine.connect() as conn:
            ents = (
                await conn.execute(
                    sa.select(e.c.id, e.c.name, e.c.aliases).where(
                        e.c.guild_id == scope.guild_id, e.c.deleted.is_(False)
                    )
                )
            ).all()
            names = {x.id: x.name for x in ents}
            start = [x.id for x in ents if _words(" ".join([x.name, *(x.aliases or [])])) & words]
            if not start:
                return []
            edges = (
                await conn.execute(
                    sa.select(r).where(r.c.guild_id == scope.guild_id, r.c.channel_id.in_(channels))
                )
            ).all()
        adj: dict[str, list[Any]] = {}
        for edge in edges:
            adj.setdefault(edge.source_id, []).append(edge)
            adj.setdefault(edge.target_id, []).append(edge)
        seen_nodes, seen_edges = set(start), set()
        out: list[tuple[Hit, float]] = []
        todo = deque((n, 0) for n in start)
        while todo and len(out) < limit:
            node, depth = todo.popleft()
            if depth >= MAX_DEPTH:
                continue
            for edge in adj.get(node, []):
                if edge.id in seen_edges:
                    continue
                seen_edges.add(edge.id)
                text = (
                    f"{names.get(edge.source_id, '?')} {edge.relationship.replace('_', ' ')} "
                    f"{names.get(edge.target_id, '?')} (observed {edge.observation_count} time(s))"
                    + (f": {edge.context}" if edge.context else "")
                )
                out.append(
                    (
                        Hit(
                            source_id=f"{PREFIX}rel:{edge.id}",
                            kind="entity",
                            text=text,
                            channel_id=edge.channel_id,
                            timestamp=_dt(edge.last_observed_ms),
                            confidence=float(min(1.0, max(0.0, edge.confidence))),
                            citation=self._cite(edge.channel_id, edge.last_observed_ms),
                        ),
                        1.0 / (depth + 1),
                    )
                )
                other = edge.target_id if edge.source_id == node else edge.source_id
                if other not in seen_nodes:
                    seen_nodes.add(other)
                    todo.append((other, depth + 1))
        return out

    async def _summaries(
        self, svc: Any, query: str, scope: Scope, channels: list[str]
    ) -> list[tuple[Hit, float]]:
        import sqlalchemy as sa

        from gigi_core.retrieval import Hit
        from gigi_knowledge import tables

        sm = tables.summaries
        async with svc.engine.connect() as conn:
            rows = (
                await conn.execute(
                    sa.select(sm)
                    .where(
                        *self._window(sm, sm.c.period_end_ms, scope),
                        sm.c.scope_type == "channel",
                        sm.c.scope_id.in_(channels),
                        sm.c.granularity.in_(("daily", "weekly")),
                    )
                    .order_by(sm.c.period_end_ms.desc())
                    .limit(3)
                )
            ).all()
        return [
            (
                Hit(
                    source_id=f"{PREFIX}summary:{r.id}",
                    kind="summary",
                    text=f"{r.granularity.capitalize()} summary: {r.summary}",
                    channel_id=r.scope_id,
                    timestamp=_dt(r.period_end_ms),
                    confidence=0.8,
                    citation=self._cite(r.scope_id, r.period_start_ms),
                ),
                0.5 / (i + 1),
            )
            for i, r in enumerate(rows)
        ]

    async def _personal(
        self, svc: Any, query: str, scope: Scope, limit: int
    ) -> list[tuple[Hit, float]]:
        import sqlalchemy as sa

        from gigi_knowledge import tables
        from gigi_knowledge.search.reads import member_in, readable_now

        d, a = tables.decisions, tables.actions
        user = scope.user_id
        assert user is not None
        readable = await readable_now(self.kernel, scope.guild_id, user)
        if not readable:  # no surface here can tell what they may read now: nothing
            return []
        chans = sorted(readable)
        async with svc.engine.connect() as conn:
            drows = (
                await conn.execute(
                    sa.select(d)
                    .where(
                        d.c.guild_id == scope.guild_id,
                        d.c.channel_id.in_(chans),
                        member_in(svc.dialect, d.c.decided_by, user),
                    )
                    .order_by(d.c.decided_ms.desc())
                    .limit(limit)
                )
            ).all()
            arows = (
                await conn.execute(
                    sa.select(a)
                    .where(
                        a.c.guild_id == scope.guild_id,
                        a.c.channel_id.in_(chans),
                        a.c.owner_id == user,
                    )
                    .order_by(a.c.created_ms.desc())
                    .limit(limit)
                )
            ).all()
        hits = [(self._action(r, scope, personal=True), 1.0) for r in arows]
        hits += [(self._decision(r, scope, personal=True), 0.8) for r in drows]
        return hits
