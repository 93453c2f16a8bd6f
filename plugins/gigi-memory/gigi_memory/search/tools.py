"""``memory.count``, ``memory.search`` and ``memory.recent``: deterministic reads.

Scopes. ``this-channel`` is the channel asked in, or the ``channel`` argument (which the
kernel checks the caller can see, like every ``x-gigi-type: channel`` argument).
``visible-guild`` is every remembered channel the caller can view now, as the surface
reports it (``ctx.visible_channels()``), with their public threads; where the surface
cannot tell (the console, a shell) it is the same channel plus its threads, and the result
says so in ``scope.note``. Nothing outside the channels reported in ``scope.channel_ids``
is ever read, counted or shown.

Search merges the full-text and vector paths (``hybrid.hybrid``; the ranking is explained
in ``lexical``); ``paths`` on each hit names the paths that found it. When there is no
embedder, or it fails, search is full text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from gigi_core import ToolExecutionError
from gigi_memory.ingest.text import query_words
from gigi_memory.policy import now_ms
from gigi_memory.search import reads
from gigi_memory.search.hybrid import hybrid
from gigi_memory.service import MemoryService, service_of

SNIPPET_CHARS = 300
READ_YOUR_WRITES_SECONDS = 0.5
VISIBLE_GUILD_NOTE = (
    "visible-guild is limited to this channel and its threads: the surface does not yet "
    "tell memory which other channels you can see"
)
_RELATIVE = re.compile(r"^\s*(\d{1,6})\s*([mhdw])\s*$", re.IGNORECASE)
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_time(name: str, text: str | None, now: datetime) -> int | None:
    """``7d``/``24h``/``30m``/``2w`` ago, or an ISO 8601 date or time (UTC without a zone)."""
    if text is None or not text.strip():
        return None
    match = _RELATIVE.match(text)
    if match:
        when = now - timedelta(**{_UNITS[match.group(2).lower()]: int(match.group(1))})
    else:
        try:
            when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ToolExecutionError(
                f"{name}: cannot read that time; use e.g. 7d, 24h, 2026-01-31 or "
                "2026-01-31T12:00:00Z"
            ) from None
        when = when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)


@dataclass(frozen=True)
class Scope:
    kind: str
    channel_ids: tuple[str, ...]
    include_threads: bool
    note: str | None = None

    def as_dict(self, f: reads.Filters) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "channel_ids": list(self.channel_ids),
            "includes_threads": self.include_threads,
            "since": _iso(f.since_ms),
            "until": _iso(f.until_ms),
        }
        if self.note:
            out["note"] = self.note
        return out


def _iso(ms: int | None) -> str | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, UTC).isoformat()


async def resolve_scope(ctx: Any, scope: str, channel: str | None) -> Scope:
    base = channel or ctx.channel_id
    if not base:
        raise ToolExecutionError("this call has no channel: name one with channel:")
    if scope == "visible-guild":
        lister = getattr(ctx, "visible_channels", None)
        visible = await lister() if lister is not None else None
        if visible is None:
            return Scope(scope, (base,), True, VISIBLE_GUILD_NOTE)
        known = service_of(ctx.kernel).cache.channels.get(ctx.guild_id, {})
        # Only channels memory holds anything for (a mode, on or off); threads follow them.
        return Scope(scope, tuple(sorted(c for c in visible if c in known)), True)
    return Scope("this-channel", (base,), False)


async def _ready(ctx: Any) -> MemoryService:
    svc = service_of(ctx.kernel)
    if not svc.cache.loaded:
        await svc.start()
    if not svc.cache.guild(ctx.guild_id).enabled:
        raise ToolExecutionError(
            "memory is turned off in this server; an admin can turn it on with "
            "/memory policy enabled:true"
        )
    # Read your own writes: what this process queued a moment ago is committed first.
    await svc.writer.flush(READ_YOUR_WRITES_SECONDS)
    return svc


def _filters(
    ctx: Any,
    scope: Scope,
    *,
    author: str | None = None,
    mentioned: str | None = None,
    since: str | None = None,
    until: str | None = None,
) -> reads.Filters:
    now = datetime.now(UTC)
    since_ms = parse_time("since", since, now)
    until_ms = parse_time("until", until, now)
    if since_ms is not None and until_ms is not None and since_ms >= until_ms:
        raise ToolExecutionError("since must be before until")
    return reads.Filters(
        guild_id=ctx.guild_id,
        channel_ids=scope.channel_ids,
        include_threads=scope.include_threads,
        now_ms=now_ms(),
        author=author or None,
        mentioned=mentioned or None,
        since_ms=since_ms,
        until_ms=until_ms,
    )


def _remembered(svc: MemoryService, ctx: Any, scope: Scope) -> list[str]:
    return [
        c
        for c in scope.channel_ids
        if (mode := svc.cache.channel(ctx.guild_id, c)) is not None and mode.mode == "on"
    ]


# -- memory.count --------------------------------------------------------------------------------


async def count(
    ctx: Any,
    text: str | None = None,
    author: str | None = None,
    mentioned: str | None = None,
    scope: str = "this-channel",
    channel: str | None = None,
    since: str | None = None,
    until: str | None = None,
) -> dict[str, Any]:
    words: list[str] | None = None
    if text is not None:
        words = query_words(text, service_of(ctx.kernel).cache.guild(ctx.guild_id).redaction)
        if not words:
            raise ToolExecutionError(
                "that text has no words to count (emoji, punctuation, mentions and masked "
                "values are not indexed); count an author with author: instead"
            )
    elif author is None and mentioned is None:
        raise ToolExecutionError("say what to count: text:, author: or mentioned:")
    svc = await _ready(ctx)
    where = await resolve_scope(ctx, scope, channel)
    f = _filters(ctx, where, author=author, mentioned=mentioned, since=since, until=until)
    if words and svc.cache.guild(ctx.guild_id).storage == "metadata_only":
        raise ToolExecutionError(
            "this server keeps metadata only, so messages cannot be counted by their words; "
            "counts by author, mention, channel and time still work"
        )
    async with svc.engine.connect() as conn:
        n, occurrences = await reads.count(conn, svc.dialect, f, words)
    counted = "messages" + (" containing the text" if words else "")
    return {
        "count": n,
        "occurrences": occurrences,
        "counted": counted,
        "scope": where.as_dict(f) | {"remembered_channel_ids": _remembered(svc, ctx, where)},
        "filters": {
            "text_words": len(words) if words else 0,
            "author": f.author,
            "mentioned": f.mentioned,
        },
    }


# -- memory.search -------------------------------------------------------------------------------


async def search(
    ctx: Any,
    query: str,
    scope: str = "this-channel",
    channel: str | None = None,
    author: str | None = None,
    since: str | None = None,
    until: str | None = None,
    limit: int = 10,
) -> dict[str, Any]:
    if not query_words(query, service_of(ctx.kernel).cache.guild(ctx.guild_id).redaction):
        raise ToolExecutionError(
            "that query has no words to search for (emoji, punctuation, mentions and masked "
            "values are not indexed)"
        )
    svc = await _ready(ctx)
    if svc.cache.guild(ctx.guild_id).storage == "metadata_only":
        raise ToolExecutionError(
            "this server keeps metadata only, so there is no text to search; counts by "
            "author, mention, channel and time still work"
        )
    where = await resolve_scope(ctx, scope, channel)
    f = _filters(ctx, where, author=author, since=since, until=until)
    fused, paths = await hybrid(svc, f, query, limit, ctx.actor.id)
    hits = [render(svc, row) | {"score": score, "paths": names} for row, score, names in fused]
    return {
        "hits": hits,
        "scope": where.as_dict(f) | {"remembered_channel_ids": _remembered(svc, ctx, where)},
        "paths": paths,  # the paths that ran
    }


# -- memory.recent -------------------------------------------------------------------------------


async def recent(ctx: Any, channel: str | None = None, limit: int = 20) -> dict[str, Any]:
    svc = await _ready(ctx)
    where = await resolve_scope(ctx, "this-channel", channel)
    f = _filters(ctx, where)
    async with svc.engine.connect() as conn:
        rows = await reads.recent(conn, f, limit)
    return {
        "messages": [render(svc, row) for row in rows],
        "scope": where.as_dict(f) | {"remembered_channel_ids": _remembered(svc, ctx, where)},
    }


# -- rendering one message -------------------------------------------------------------------------


def render(svc: MemoryService, row: Any) -> dict[str, Any]:
    """Ids, time, a jump link and the snippet (every row here is in a channel the caller sees)."""
    text = svc.unseal(row)
    if text is None and row.search_text:
        text = row.search_text  # index_only: the search words are all there is
    snippet = None
    if text:
        snippet = text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1] + "…"
    return {
        "message_id": row.message_id,
        "channel_id": row.channel_id,
        "author_id": row.author_id,
        "created_at": _iso(row.created_ms),
        "edited_at": _iso(row.edited_ms),
        "url": _jump(row),
        "snippet": snippet,
    }


def _jump(row: Any) -> str | None:
    if row.surface != "discord" or not all(
        str(x).isdigit() for x in (row.guild_id, row.channel_id, row.message_id)
    ):
        return None
    return f"https://discord.com/channels/{row.guild_id}/{row.channel_id}/{row.message_id}"
