"""What the policy needs to know about one actor in one guild, read once per guild.

A guild's plugin rows and grants are read together (two queries) and every member's view
is built from them in memory; a guild with more than ``GRANTS_KEPT`` grant rows reads each
member's grants instead (one query per member). A run reads this once and decides every call of that run against it; a run resumed after a
confirmation reads it afresh, so a revoked grant applies from the next step that resumes.
The stored facts are cached for ``GIGI_POLICY_CACHE_SECONDS`` (default 2): a change made
through this process's kernel clears the cache at once, one made by another process (the
CLI while the bot runs) applies within that time. ``capabilities_for`` hooks are asked
every time. In the last quarter of a guild's facts' life they are read again once, in the
background, while every turn goes on with them (as ``gigi_core.llm.cache`` does): ten
concurrent turns arriving as the facts expired made ten reads at once, 20-180 ms each
under load (a p99 spike).
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from gigi_core.errors import ConfigError
from gigi_core.policy.actor import Actor
from gigi_core.policy.engine import hook_capabilities
from gigi_core.policy.shared_reads import SharedReads
from gigi_core.store.grants import actor_grants_query
from gigi_core.store.tables import CapabilityGrant, GuildPlugin

if TYPE_CHECKING:
    from gigi_core.kernel import Kernel


@dataclass(frozen=True)
class GuildView:
    guild_id: str
    enabled: frozenset[str]
    external: frozenset[str]  # plugins whose external actions the guild consented to
    grants: frozenset[str]
    hook_capabilities: frozenset[str]
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)  # plain fields only
    hook_failure: str | None = None  # a capabilities_for hook failed: every call is denied
    held: frozenset[str] = frozenset()  # held back by an upgrade, not accepted here
    # What the policy offers on these facts, per (grants, admin flag): shared by every view
    # of the guild read from the same guild facts, so a new member with the same grants as
    # another reuses the offer instead of deciding every action again.
    offers: dict[Any, tuple[Any, ...]] = field(default_factory=dict, compare=False, repr=False)
    # The kernel's own decision per (action, admin flag, channel check, registry facts) on
    # these facts (``engine.cached_base_decision``): gone with the view when facts change.
    decisions: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)


log = logging.getLogger(__name__)
#: A guild with more grant rows than this reads each member's grants on their first turn
#: instead of keeping all of them (memory stays bounded in a guild with huge grant lists).
GRANTS_KEPT = 1_000
Subject = tuple[str, str]  # (subject_type, subject_id): ("user", id) or ("role", id)


@dataclass
class _GuildFacts:
    """The guild's half of a view (plugin rows, grants), the same for every member.

    The views derived from it live in it, so a member's view never outlives the facts it
    was built from: an outside change applies within the TTL, not within twice that.
    """

    enabled: frozenset[str]
    external: frozenset[str]
    configs: dict[str, dict[str, Any]]
    grants: dict[Subject, frozenset[str]] | None  # None: too many kept, read per member
    held: frozenset[str] = frozenset()  # actions an upgrade holds back until accepted here
    offers: dict[Any, tuple[Any, ...]] = field(default_factory=dict)
    views: dict[tuple[Any, ...], GuildView] = field(default_factory=dict)

    def grants_of(self, actor: Actor) -> frozenset[str] | None:
        """The capability patterns granted to the actor or their roles, when all are kept."""
        if self.grants is None:
            return None
        found = self.grants.get(("user", actor.id), _NONE)
        for role in actor.roles:
            held = self.grants.get(("role", role))
            if held:
                found = found | held
        return found


_NONE: frozenset[str] = frozenset()


class ViewCache:
    """Stored facts per guild, and the views of its members built on them, for a few
    seconds; cleared on any change."""

    max_entries = 10_000

    def __init__(self, ttl: float | None = None) -> None:
        if ttl is None:
            raw = os.environ.get("GIGI_POLICY_CACHE_SECONDS") or "2"
            try:
                ttl = float(raw)
            except ValueError:
                ttl = math.nan
            if not math.isfinite(ttl) or ttl < 0:
                raise ConfigError(
                    f"GIGI_POLICY_CACHE_SECONDS: {raw!r} is not a number of seconds (0 or more)"
                )
        self.ttl = ttl
        self.generation = 0  # bumped by every clear: a read begun before it is not kept
        self._guilds: dict[str, tuple[float, _GuildFacts]] = {}
        self._renewing: dict[str, float] = {}  # guild id -> until when one caller reads it
        self.reads = SharedReads()  # turns that miss a guild's facts together read them once

    def get(self, key: tuple[Any, ...]) -> GuildView | None:
        """A member's view, keyed ``(guild_id, actor id, roles)``, while its guild's facts live."""
        facts = self.guild(key[0])
        return None if facts is None else facts.views.get(key)

    def lookup(self, key: tuple[Any, ...]) -> tuple[_GuildFacts | None, GuildView | None, bool]:
        """The guild's facts and the member's view (None, None once expired), and whether
        this caller should renew the facts (the first one in their last quarter)."""
        entry = self._guilds.get(key[0])
        now = time.monotonic()
        if entry is None or entry[0] < now:
            return None, None, False
        renew = entry[0] - now < self.ttl / 4 and self._renewing.get(key[0], 0.0) < now
        if renew:
            if len(self._renewing) >= self.max_entries:
                self._renewing.clear()
            self._renewing[key[0]] = now + self.ttl / 4  # another may try if this one fails
        return entry[1], entry[1].views.get(key), renew

    def put(self, key: tuple[Any, ...], view: GuildView, generation: int) -> None:
        """Kept with the guild's facts it was built on (not at all if those are gone)."""
        if self.ttl <= 0 or generation != self.generation:
            return
        facts = self.guild(key[0])
        if facts is None or facts.offers is not view.offers:  # built on other facts
            return
        if len(facts.views) >= self.max_entries:
            facts.views.clear()
        facts.views[key] = view

    def guild(self, guild_id: str) -> _GuildFacts | None:
        entry = self._guilds.get(guild_id)
        if entry is None or entry[0] < time.monotonic():
            return None
        return entry[1]

    def put_guild(self, guild_id: str, facts: _GuildFacts, generation: int) -> None:
        self._renewing.pop(guild_id, None)
        if self.ttl <= 0 or generation != self.generation:
            return
        if len(self._guilds) >= self.max_entries:
            self._guilds.clear()
        self._guilds[guild_id] = (time.monotonic() + self.ttl, facts)

    def clear(self) -> None:
        self.generation += 1
        self._guilds.clear()
        self._renewing.clear()


async def guild_view(kernel: Kernel, actor: Actor, guild_id: str) -> GuildView:
    key = (guild_id, actor.id, actor.roles)  # the admin flag is not a stored fact
    generation = kernel.views.generation
    facts, stored, renew = kernel.views.lookup(key)
    if renew:  # in the background: this turn goes on with the cached facts
        task = asyncio.get_running_loop().create_task(_renew(kernel, guild_id, generation))
        _RENEWALS.add(task)
        task.add_done_callback(_RENEWALS.discard)
    if stored is None:
        stored = await _read(kernel, actor, guild_id, facts)
        kernel.views.put(key, stored, generation)
    hook_caps, failure = await hook_capabilities(kernel, actor, guild_id)
    if hook_caps or failure:
        return replace(
            stored, hook_capabilities=hook_caps, hook_failure=failure, offers={}, decisions={}
        )
    return stored


_RENEWALS: set[asyncio.Task[None]] = set()  # renewals running (a task needs a reference)


async def _renew(kernel: Kernel, guild_id: str, generation: int) -> None:
    """Read the guild's facts again; a failure leaves them to expire (and be read) as usual."""
    try:
        async with kernel.db.engine.connect() as conn:  # no ORM
            rows = (await conn.execute(_plugin_rows(guild_id))).all()
            kept = (await conn.execute(_grant_rows(guild_id))).all()
        held = await kernel.reviews.held_in(guild_id)
    except Exception as exc:
        log.warning("renewing the cached policy facts failed: %s", type(exc).__name__)
        return
    facts = _guild_facts(kernel, guild_id, rows, kept, held)
    kernel.views.put_guild(guild_id, facts, generation)


async def _read(
    kernel: Kernel, actor: Actor, guild_id: str, facts: _GuildFacts | None
) -> GuildView:
    """The guild's plugin rows and grants unless ``facts`` (cached, another member's read)
    has them: a new member then costs no query at all (one for their grants in a guild with
    more than ``GRANTS_KEPT`` grant rows)."""
    if facts is None:  # every member arriving now waits for the one read
        generation = kernel.views.generation
        if kernel.views.ttl > 0:
            facts = await kernel.views.reads.read(
                (guild_id, generation), lambda: _read_facts(kernel, guild_id, generation)
            )
        else:  # the cache is off: nothing read by another caller is used
            facts = await _read_facts(kernel, guild_id, generation)
    grants = facts.grants_of(actor)
    if grants is None:
        async with kernel.db.engine.connect() as conn:  # no ORM
            query = actor_grants_query(guild_id, actor)
            grants = frozenset((await conn.execute(query)).scalars())
    return GuildView(
        guild_id=guild_id,
        enabled=facts.enabled,
        external=facts.external,
        grants=grants,
        hook_capabilities=frozenset(),
        configs=facts.configs,
        held=facts.held,
        offers=facts.offers,
    )


async def _read_facts(kernel: Kernel, guild_id: str, generation: int) -> _GuildFacts:
    async with kernel.db.engine.connect() as conn:  # no ORM
        rows = (await conn.execute(_plugin_rows(guild_id))).all()
        kept = (await conn.execute(_grant_rows(guild_id))).all()
    held = await kernel.reviews.held_in(guild_id)
    facts = _guild_facts(kernel, guild_id, rows, kept, held)
    kernel.views.put_guild(guild_id, facts, generation)
    return facts


def _grant_rows(guild_id: str) -> Any:
    return (
        select(CapabilityGrant.subject_type, CapabilityGrant.subject_id, CapabilityGrant.capability)
        .where(CapabilityGrant.guild_id == guild_id)
        .limit(GRANTS_KEPT + 1)
    )


def _plugin_rows(guild_id: str) -> Any:
    return select(
        GuildPlugin.plugin,
        GuildPlugin.enabled,
        GuildPlugin.allow_external,
        GuildPlugin.config,
        GuildPlugin.distribution,
    ).where(GuildPlugin.guild_id == guild_id)


def _guild_facts(
    kernel: Kernel,
    guild_id: str,
    rows: list[Any],
    grant_rows: list[Any],
    held: frozenset[str] = frozenset(),
) -> _GuildFacts:
    # A row another distribution of the same name saved is not this plugin's (and is logged).
    usable = getattr(kernel.plugin_state, "usable", None)
    saved = {r[0] for r in rows}
    rows = [r[:4] for r in rows if usable is None or usable(guild_id, r[0], r[4])]
    stored = {plugin: enabled for plugin, enabled, _, _ in rows}
    stored.update((p, False) for p in saved - set(stored))
    defaults = {p for p in getattr(kernel.plugin_state, "on_by_default", ()) if p not in stored}
    return _GuildFacts(
        enabled=frozenset({p for p, on in stored.items() if on} | defaults),
        external=frozenset(p for p, _, external, _ in rows if external),
        configs={p: dict(config or {}) for p, _, _, config in rows},
        grants=_by_subject(grant_rows) if len(grant_rows) <= GRANTS_KEPT else None,
        held=held,
    )


def _by_subject(rows: list[Any]) -> dict[Subject, frozenset[str]]:
    held: dict[Subject, set[str]] = {}
    for subject_type, subject_id, capability in rows:
        held.setdefault((subject_type, subject_id), set()).add(capability)
    return {subject: frozenset(caps) for subject, caps in held.items()}
