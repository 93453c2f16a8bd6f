"""What the policy needs to know about one actor in one guild, read in two queries.

A run reads this once and decides every call of that run against it; a run resumed after a
confirmation reads it afresh, so a revoked grant applies from the next step that resumes.
The stored facts are cached for ``GIGI_POLICY_CACHE_SECONDS`` (default 2): a change made
through this process's kernel clears the cache at once, one made by another process (the
CLI while the bot runs) applies within that time. ``capabilities_for`` hooks are asked
every time.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from gigi_core.errors import ConfigError
from gigi_core.policy.actor import Actor
from gigi_core.policy.engine import hook_capabilities
from gigi_core.store.grants import actor_grants_query
from gigi_core.store.tables import GuildPlugin

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
    # What the policy offers on these facts, per (grants, admin flag): shared by every view
    # of the guild read from the same guild facts, so a new member with the same grants as
    # another reuses the offer instead of deciding every action again.
    offers: dict[Any, tuple[Any, ...]] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class _GuildFacts:
    """The guild's half of a view (plugin rows), the same for every member."""

    enabled: frozenset[str]
    external: frozenset[str]
    configs: dict[str, dict[str, Any]]
    offers: dict[Any, tuple[Any, ...]] = field(default_factory=dict)


class ViewCache:
    """Stored facts per (guild, actor identity) for a few seconds; cleared on any change."""

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
        self._entries: dict[tuple[Any, ...], tuple[float, GuildView]] = {}
        self._guilds: dict[str, tuple[float, _GuildFacts]] = {}

    def get(self, key: tuple[Any, ...]) -> GuildView | None:
        entry = self._entries.get(key)
        if entry is None or entry[0] < time.monotonic():
            return None
        return entry[1]

    def put(self, key: tuple[Any, ...], view: GuildView, generation: int) -> None:
        if self.ttl <= 0 or generation != self.generation:
            return
        if len(self._entries) >= self.max_entries:
            self._entries.clear()
        self._entries[key] = (time.monotonic() + self.ttl, view)

    def guild(self, guild_id: str) -> _GuildFacts | None:
        entry = self._guilds.get(guild_id)
        if entry is None or entry[0] < time.monotonic():
            return None
        return entry[1]

    def put_guild(self, guild_id: str, facts: _GuildFacts, generation: int) -> None:
        if self.ttl <= 0 or generation != self.generation:
            return
        if len(self._guilds) >= self.max_entries:
            self._guilds.clear()
        self._guilds[guild_id] = (time.monotonic() + self.ttl, facts)

    def clear(self) -> None:
        self.generation += 1
        self._entries.clear()
        self._guilds.clear()


async def guild_view(kernel: Kernel, actor: Actor, guild_id: str) -> GuildView:
    key = (guild_id, actor.id, actor.roles)  # the admin flag is not a stored fact
    stored = kernel.views.get(key)
    if stored is None:
        generation = kernel.views.generation
        stored = await _read(kernel, actor, guild_id)
        kernel.views.put(key, stored, generation)
    hook_caps, failure = await hook_capabilities(kernel, actor, guild_id)
    if hook_caps or failure:
        return replace(stored, hook_capabilities=hook_caps, hook_failure=failure, offers={})
    return stored


async def _read(kernel: Kernel, actor: Actor, guild_id: str) -> GuildView:
    """The actor's grants, and the guild's plugin rows unless another member's read has them
    cached: a new member costs one query, not two."""
    generation = kernel.views.generation
    facts = kernel.views.guild(guild_id)
    async with kernel.db.engine.connect() as conn:  # no ORM
        if facts is None:
            facts = _guild_facts(
                kernel, guild_id, (await conn.execute(_plugin_rows(guild_id))).all()
            )
            kernel.views.put_guild(guild_id, facts, generation)
        grants = frozenset((await conn.execute(actor_grants_query(guild_id, actor))).scalars())
    return GuildView(
        guild_id=guild_id,
        enabled=facts.enabled,
        external=facts.external,
        grants=grants,
        hook_capabilities=frozenset(),
        configs=facts.configs,
        offers=facts.offers,
    )


def _plugin_rows(guild_id: str) -> Any:
    return select(
        GuildPlugin.plugin,
        GuildPlugin.enabled,
        GuildPlugin.allow_external,
        GuildPlugin.config,
        GuildPlugin.distribution,
    ).where(GuildPlugin.guild_id == guild_id)


def _guild_facts(kernel: Kernel, guild_id: str, rows: list[Any]) -> _GuildFacts:
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
    )
