"""Held-back plugin actions and per-guild acceptances: what the policy denies after an upgrade.

The holds for the plugin versions this process loaded are read once and kept (they change
only with an upgrade, which needs a restart to load anyway); when there are none — the usual
case — a guild's policy facts cost no query here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError

from gigi_core.store.db import Database
from gigi_core.store.review_tables import PluginHold, PluginReviewAccept

EVERY_ACTION = "*"  # a hold on every action of the plugin version (its data statement changed)


@dataclass(frozen=True)
class Held:
    """A plugin version's held-back actions in one guild, with what widened each."""

    plugin: str
    version: str
    actions: tuple[tuple[str, str], ...]  # (action or "*", change)

    def as_dict(self) -> dict[str, Any]:
        return {
            "plugin": self.plugin,
            "version": self.version,
            "actions": [{"action": a, "change": c} for a, c in self.actions],
        }


class PluginReviews:
    """Writes holds at upgrade time; answers "is this action held in this guild?"."""

    def __init__(
        self, db: Database, registry: Any = None, *, on_change: Callable[[], None] = lambda: None
    ) -> None:
        self.db = db
        self.registry = registry  # the loaded plugins: whose versions' holds apply
        self.on_change = on_change  # clears cached policy facts
        self._loaded: dict[tuple[str, str], list[tuple[str, str]]] | None = None

    async def record(self, plugin: str, version: str, holds: Mapping[str, str]) -> None:
        """Replace the holds of one plugin version (action -> what widened)."""
        async with self.db.session() as s:
            await s.execute(
                delete(PluginHold).where(PluginHold.plugin == plugin, PluginHold.version == version)
            )
            for action, change in sorted(holds.items()):
                s.add(
                    PluginHold(plugin=plugin, version=version, action=action, change=change[:500])
                )
        self._loaded = None
        self.on_change()

    def versions(self) -> dict[str, str]:
        """Plugin name -> the version of the distribution that loaded it, in this process."""
        if self.registry is None:
            return {}
        return {
            m.plugin.name: str(record.version or m.plugin.version)
            for record in self.registry.records.values()
            if record.status == "ok"
            for m in record.manifests
        }

    async def holds(self) -> dict[tuple[str, str], list[tuple[str, str]]]:
        """Holds of the loaded plugin versions, kept once read."""
        if self._loaded is None:
            wanted = set(self.versions().items())
            found: dict[tuple[str, str], list[tuple[str, str]]] = {}
            if wanted:
                async with self.db.engine.connect() as conn:
                    rows = await conn.execute(
                        select(
                            PluginHold.plugin,
                            PluginHold.version,
                            PluginHold.action,
                            PluginHold.change,
                        ).where(PluginHold.plugin.in_(sorted({p for p, _ in wanted})))
                    )
                    for plugin, version, action, change in rows:
                        if (plugin, version) in wanted:
                            found.setdefault((plugin, version), []).append((action, change))
            self._loaded = found
        return self._loaded

    async def pending(self, guild_id: str) -> list[Held]:
        """The loaded plugin versions whose holds this guild has not accepted."""
        holds = await self.holds()
        if not holds:
            return []
        accepted = await self._accepted(guild_id)
        return [
            Held(plugin, version, tuple(sorted(actions)))
            for (plugin, version), actions in sorted(holds.items())
            if (plugin, version) not in accepted
        ]

    async def waiting(self) -> dict[str, list[Held]]:
        """Per guild that has a held plugin enabled: what it has not accepted yet."""
        holds = await self.holds()
        if not holds:
            return {}
        from gigi_core.store.tables import GuildPlugin

        plugins = sorted({plugin for plugin, _ in holds})
        async with self.db.engine.connect() as conn:
            rows = await conn.execute(
                select(GuildPlugin.guild_id, GuildPlugin.plugin).where(
                    GuildPlugin.plugin.in_(plugins), GuildPlugin.enabled.is_(True)
                )
            )
            accepted = await conn.execute(
                select(
                    PluginReviewAccept.guild_id,
                    PluginReviewAccept.plugin,
                    PluginReviewAccept.version,
                ).where(PluginReviewAccept.plugin.in_(plugins))
            )
            done = {tuple(row) for row in accepted}
            enabled = [(guild, plugin) for guild, plugin in rows]
        out: dict[str, list[Held]] = {}
        for (plugin, version), actions in sorted(holds.items()):
            for guild, on in sorted(enabled):
                if on == plugin and (guild, plugin, version) not in done:
                    out.setdefault(guild, []).append(Held(plugin, version, tuple(sorted(actions))))
        return dict(sorted(out.items()))

    async def held_in(self, guild_id: str) -> frozenset[str]:
        """Action names (and ``plugin:*``) denied in this guild until accepted."""
        held: set[str] = set()
        for item in await self.pending(guild_id):
            held.update(
                f"{item.plugin}:{EVERY_ACTION}" if action == EVERY_ACTION else action
                for action, _ in item.actions
            )
        return frozenset(held)

    async def accept(self, guild_id: str, plugin: str, version: str, by: str | None) -> bool:
        """Accept a plugin version's held-back actions in one guild; False if already done."""
        try:
            async with self.db.session() as s:
                s.add(
                    PluginReviewAccept(
                        guild_id=guild_id, plugin=plugin, version=version, accepted_by=by
                    )
                )
        except IntegrityError:
            return False
        from gigi_core.store.audit import AuditLog, AuditRecord

        await AuditLog(
            self.db
        ).record(  # names only, as every admin change
            AuditRecord(
                kind="plugin.review.accept",
                status="ok",
                actor_id=by,
                guild_id=guild_id,
                action=f"{plugin} {version}"[:128],
            )
        )
        self.on_change()
        return True

    async def _accepted(self, guild_id: str) -> set[tuple[str, str]]:
        async with self.db.engine.connect() as conn:
            rows = await conn.execute(
                select(PluginReviewAccept.plugin, PluginReviewAccept.version).where(
                    PluginReviewAccept.guild_id == guild_id
                )
            )
            return {(p, v) for p, v in rows}
