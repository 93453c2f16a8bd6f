"""The context broker: decides what context a run needs and builds its pack.

``build_context`` is the one entry point the agent runner calls per turn; the mode is the
member's choice (``/ask context:``) or ``auto``, decided here from the request alone.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from gigi_core.context import answers
from gigi_core.context.modes import MODES
from gigi_core.context.pack import HASHER, Candidate, ContextPack, PackState, assemble
from gigi_core.retrieval.engine import Path, permitted_paths, retrieve
from gigi_core.retrieval.port import Citation, Hit, RetrievalError, Scope, as_hit

if TYPE_CHECKING:
    from gigi_core.kernel import Kernel
    from gigi_core.policy.actor import Actor

log = logging.getLogger(__name__)

_CATALOG = re.compile(
    r"\b(what can you do|what do you do|can you|are you able|which (?:tools|commands|plugins)|"
    r"how do i|help me with)\b",
    re.I,
)
_HERE = re.compile(r"\b(here|this channel|above|earlier|just now|recently said)\b", re.I)
_SMALL_TALK = re.compile(r"^\W*(hi|hello|hey|thanks|thank you|ok|okay|cheers)\W*$", re.I)


def decide(mode: str, text: str, *, has_paths: bool) -> tuple[str, ...]:
    """Which context sources a run gets: a subset of channel, memory, knowledge, catalog."""
    if mode not in MODES:
        raise RetrievalError(f"unknown context mode {mode!r}; use one of {', '.join(MODES)}")
    if mode == "none":
        return ()
    if mode != "auto":
        return (mode,)
    words = text.split()
    if not words or _SMALL_TALK.match(text):
        return ()
    if _CATALOG.search(text):
        return ("catalog",)
    sources: list[str] = []
    if _HERE.search(text) or not has_paths:
        sources.append("channel")
    if has_paths:
        sources += ["memory", "knowledge"]
    return tuple(sources)


async def build_context(
    kernel: Kernel,
    *,
    actor: Actor,
    guild_id: str,
    channel_id: str | None,
    visible_channels: frozenset[str],
    text: str,
    mode: str = "auto",
    previous: PackState | Mapping[str, Any] | None = None,
    pinned: Sequence[Hit] = (),
    personal_user: str | None = None,
    provider: str | None = None,
    use_model: bool = True,
    now: datetime | None = None,
) -> ContextPack:
    """The context pack for one turn. ``visible_channels`` comes from the surface;
    ``previous`` is the last turn's ``pack.state`` (or its ``to_dict()``), for restore
    handles; ``provider`` picks the token estimate (docs/retrieval.md)."""
    from gigi_core.policy.view import guild_view
    from gigi_core.retrieval.config import for_guild

    if not isinstance(visible_channels, frozenset):
        raise RetrievalError("visible_channels must be a frozenset of channel ids")
    now = now or datetime.now(UTC)
    if not isinstance(previous, PackState):
        previous = PackState.from_dict(previous)
    view = await guild_view(kernel, actor, guild_id)
    settings = for_guild(view.configs.get("gigi"))
    paths, _ = permitted_paths(kernel, actor, view)
    sources = decide(mode, text, has_paths=bool(paths))
    candidates = [Candidate(h, float("inf"), "pinned") for h in _pinned(pinned)]
    trace: dict[str, Any] = {"sources": list(sources)}
    reports: dict[str, Any] = {}
    if "channel" in sources:
        hits, why = await _channel_hits(kernel, guild_id, channel_id, visible_channels, settings)
        candidates += [Candidate(h, 1.0 / (settings.rrf_k + n), "channel") for n, h in hits]
        trace["channel"] = {"hits": len(hits), **({"reason": why} if why else {})}
    wanted = tuple(s for s in sources if s in ("memory", "knowledge"))
    if wanted:
        result = await retrieve(
            kernel,
            actor=actor,
            guild_id=guild_id,
            visible_channels=visible_channels,
            query=text,
            personal_user=personal_user,
            sources=wanted,
            use_model=use_model,
            now=now,
            view=view,
        )
        names = {p.name for p in paths}
        for r in result.ranked:
            path = min((_path_name(p, names) for p in r.paths), default="retrieval")
            candidates.append(Candidate(r.hit, r.score, path))
        trace["retrieval"] = result.trace()
        reports = result.reports
    if "catalog" in sources:
        catalog = _catalog_hits(kernel, actor, view, text)
        candidates += [Candidate(h, 1.0 / (settings.rrf_k + n), "catalog") for n, h in catalog]
        trace["catalog"] = {"hits": len(catalog)}
    gone: list[str] = []
    expired: list[str] = []
    if previous is not None:
        scope = Scope(guild_id, visible_channels, user_id=personal_user)
        found = {c.hit.source_id for c in candidates}
        missing = {sid: v[2] for sid, v in previous.items.items() if sid not in found}
        refreshed, gone, expired = await _recheck(missing, paths, scope, settings)
        candidates += [Candidate(h, 0.0, missing[h.source_id]) for h in refreshed]
    offered = answers.guidance(paths, {c.path for c in candidates})
    keyed = HASHER.set(kernel.state_sealer.keyed_hash)  # stored fingerprints are keyed
    try:
        pack = assemble(
            candidates,
            mode=mode,
            settings=settings,
            now=now,
            previous=previous,
            gone=gone,
            expired=expired,
            provider=provider,
            guidance=offered,
        )
    finally:
        HASHER.reset(keyed)
    decided = answers.no_record_reply(
        mode=mode,
        text=text,
        sources=sources,
        paths=paths,
        reports=reports,
        found_anything=bool(candidates) or not pack.empty,
    )
    if decided is not None:
        trace["answer"] = {"reason": "no_record", "path": decided[0]}
        pack.answer = decided[1]
    pack.extra_trace = trace
    return pack


def _path_name(label: str, names: set[str]) -> str:
    """The registered path behind a fused label (``path`` or ``path.sub``; a path's own name
    may hold dots, as ``acme.docs`` does): the longest name it starts with."""
    owners = [n for n in names if label == n or label.startswith(n + ".")]
    return max(owners, key=len) if owners else label.split(".", 1)[0]


def _pinned(pinned: Sequence[Hit]) -> list[Hit]:
    from dataclasses import replace

    return [replace(as_hit(h), pinned=True) for h in pinned]


async def _channel_hits(
    kernel: Kernel,
    guild_id: str,
    channel_id: str | None,
    visible: frozenset[str],
    settings: Any,
) -> tuple[list[tuple[int, Hit]], str | None]:
    """Recent messages of the current channel through the surface, newest first."""
    if channel_id is None or channel_id not in visible:
        return [], "no visible current channel"
    if not kernel.history.serves(guild_id):
        return [], "no surface here reads this guild's history"
    from gigi_core.events import HistoryForbidden, HistoryUnavailable

    try:
        page = await kernel.history.page(
            guild_id, channel_id, limit=max(1, min(settings.channel_messages, 100))
        )
    except (HistoryUnavailable, HistoryForbidden) as exc:
        return [], type(exc).__name__
    hits = []
    for n, m in enumerate(page.messages, 1):
        if not m.text.strip():
            continue
        when = m.created_at if m.created_at.tzinfo else m.created_at.replace(tzinfo=UTC)
        hits.append(
            (
                n,
                Hit(
                    source_id=f"channel:msg:{m.message_id}",
                    kind="message",
                    text=m.text[:1000],
                    channel_id=m.channel_id,
                    timestamp=when,
                    citation=Citation(f"#{m.channel_id} · {when.date().isoformat()}"),
                    paths=("recent",),
                ),
            )
        )
    return hits, None


def _catalog_hits(kernel: Kernel, actor: Actor, view: Any, text: str) -> list[tuple[int, Hit]]:
    """Enabled actions matching the request, as Related Context (runs nothing)."""
    from gigi_core.retrieval.catalog import match_actions

    # What the model could be offered, nothing more: not hidden actions (offer_to_model
    # false), not withdrawn ones (an MCP tool that changed), not other plugins'.
    actions = [
        a
        for a in kernel.registry.actions.values()
        if a.plugin in view.enabled and a.offer_to_model and a.name not in kernel.withdrawn
    ]
    out = []
    for n, (action, _) in enumerate(match_actions(text, actions, limit=8), 1):
        body = f"{action.name}: {action.description} (needs {action.capability}; {action.safety})"
        out.append(
            (
                n,
                Hit(
                    f"catalog:action:{action.name}",
                    "context",
                    body,
                    None,
                    citation=Citation("plugin catalog"),
                    user_id=actor.id,
                ),
            )
        )
    return out


async def _recheck(
    missing: Mapping[str, str], paths: Sequence[Path], scope: Scope, settings: Any
) -> tuple[list[Hit], list[str], list[str]]:
    """Re-read earlier items this turn did not retrieve: still there (and unchanged or not),
    gone (deleted, out of scope, or the path is no longer permitted), or unverifiable."""
    by_name = {p.name: p for p in paths}
    refreshed: list[Hit] = []
    gone: list[str] = []
    expired: list[str] = []
    groups: dict[str, list[str]] = {}
    for sid, path in missing.items():
        groups.setdefault(path, []).append(sid)
    for path, sids in sorted(groups.items()):
        p = by_name.get(path)
        lookup = getattr(p.retriever, "lookup", None) if p is not None else None
        if p is None and path not in ("channel", "catalog", "pinned"):
            gone += sids  # the retriever is not permitted (or installed) any more
            continue
        if lookup is None:
            expired += sids
            continue
        try:
            raw = await asyncio.wait_for(lookup(sorted(sids), scope), settings.path_timeout_seconds)
            found = {}
            for item in raw if isinstance(raw, list | tuple) else ():
                try:
                    hit = as_hit(item)
                except ValueError:
                    continue
                if hit.source_id in sids and scope.admits(hit):
                    found[hit.source_id] = hit
        except Exception as exc:
            log.warning("retriever %s could not re-read earlier items (%s)", path, exc)
            expired += sids
            continue
        refreshed += [found[s] for s in sorted(found)]
        gone += [s for s in sids if s not in found]
    return refreshed, sorted(gone), sorted(expired)
