"""Held-back plugin actions and per-guild acceptances: what the policy denies after an upgrade.

A hold stays until accepted: a guild's pending holds for the loaded version V are those
recorded for V and for every earlier version after the newest one the guild accepted (so
installing 1.2 over a 1.1 nobody accepted keeps 1.1's holds). The holds for the plugins this
process loaded are read once and kept (they change only with an upgrade, which needs a
restart to load anyway); when there are none — the usual case — a guild's policy facts
cost no query here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version
from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError

from gigi_core.store.db import Database
from gigi_core.store.review_tables import PluginHold, PluginReviewAccept

EVERY_ACTION = "*"  # a hold on every action of the plugin version (its data statement changed)
#: Where the operator's acceptance for direct messages is recorded (``gigi plugins review
#: --dm --accept``): DMs have no admin of their own, and no guild's admin decides for them.
DM_ACCEPTS = "(direct messages)"

Row = tuple[str, str, str]  # (version that recorded it, action or "*", change)


def _order(version: str) -> Version | None:
    try:
        return Version(version)
    except InvalidVersion:
        return None


def _not_after(version: str, loaded: str) -> bool:
    """A hold recorded for ``version`` counts for ``loaded`` (same, or older by PEP 440)."""
    if version == loaded:
        return True
    mine, other = _order(loaded), _order(version)
    return mine is not None and other is not None and other < mine


def unaccepted(rows: list[Row], loaded: str, accepted: set[str]) -> tuple[tuple[str, str], ...]:
    """(action, change) still held for version ``loaded`` given the versions ``accepted``:
    the holds of ``loaded`` and of each earlier version newer than the newest one accepted
    (an acceptance covers everything up to the version accepted, never a later one)."""
    mine = _order(loaded)
    floors = [
        o for a in accepted if (o := _order(a)) is not None and mine is not None and o <= mine
    ]
    if loaded in accepted or (mine is not None and mine in floors):
        return ()
    floor = max(floors, default=None)
    earlier = sorted((r for r in rows if r[0] != loaded), key=lambda r: _order(r[0]) or mine)
    kept: dict[str, str] = {}
    for version, action, change in [*earlier, *(r for r in rows if r[0] == loaded)]:
        if version != loaded:
            if floor is not None and (_order(version) or floor) <= floor:
                continue
            change = f"{change} (held since {version})"
        kept.setdefault(action, change)
    return tuple(sorted(kept.items()))


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

    async def holds(self) -> dict[tuple[str, str], list[Row]]:
        """Per loaded (plugin, version): the holds recorded for it and for earlier versions,
        kept once read."""
        if self._loaded is None:
            wanted = self.versions()
            found: dict[tuple[str, str], list[Row]] = {}
            if wanted:
                async with self.db.engine.connect() as conn:
                    rows = await conn.execute(
                        select(
                            PluginHold.plugin,
                            PluginHold.version,
                            PluginHold.action,
                            PluginHold.change,
                        ).where(PluginHold.plugin.in_(sorted(wanted)))
                    )
                    for plugin, version, action, change in rows:
                        loaded = wanted.get(plugin)
                        if loaded is not None and _not_after(version, loaded):
                            found.setdefault((plugin, loaded), []).append((version, action, change))
            self._loaded = found
        return self._loaded

    async def earlier(self, plugin: str, version: str) -> dict[str, list[str]]:
        """Version -> held actions recorded for versions of ``plugin`` before ``version``:
        what installing ``version`` keeps held where those were not accepted."""
        async with self.db.engine.connect() as conn:
            rows = await conn.execute(
                select(PluginHold.version, PluginHold.action).where(PluginHold.plugin == plugin)
            )
            found: dict[str, list[str]] = {}
            for held_version, action in rows:
                if held_version != version and _not_after(held_version, version):
                    found.setdefault(held_version, []).append(action)
        return {v: sorted(a) for v, a in sorted(found.items())}

    async def pending(self, guild_id: str) -> list[Held]:
        """The loaded plugin versions with holds this guild has not accepted."""
        holds = await self.holds()
        if not holds:
            return []
        return self._pending(holds, await self._accepted(guild_id))

    @staticmethod
    def _pending(
        holds: dict[tuple[str, str], list[Row]], accepted: set[tuple[str, str]]
    ) -> list[Held]:
        out = []
        for (plugin, version), rows in sorted(holds.items()):
            done = {v for p, v in accepted if p == plugin}
            actions = unaccepted(rows, version, done)
            if actions:
                out.append(Held(plugin, version, actions))
        return out

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
            enabled: dict[str, set[str]] = {}
            for guild, plugin in rows:
                enabled.setdefault(guild, set()).add(plugin)
            accepted = await conn.execute(
                select(
                    PluginReviewAccept.guild_id,
                    PluginReviewAccept.plugin,
                    PluginReviewAccept.version,
                ).where(PluginReviewAccept.plugin.in_(plugins))
            )
            done: dict[str, set[tuple[str, str]]] = {}
            for guild, plugin, version in accepted:
                done.setdefault(guild, set()).add((plugin, version))
        out: dict[str, list[Held]] = {}
        for guild, on in sorted(enabled.items()):
            mine = {key: rows for key, rows in holds.items() if key[0] in on}
            items = self._pending(mine, done.get(guild, set()))
            if items:
                out[guild] = items
        return out

    async def observers_held(self, guild_id: str | None) -> frozenset[str]:
        """Plugins whose event observers get erasures only: in a guild, those with anything
        pending there; in direct messages, those the operator has not accepted for DMs
        (``DM_ACCEPTS``): a guild's admin, anyone who invites the bot, decides for their
        own server only."""
        holds = await self.holds()
        if not holds:
            return frozenset()
        accepted = await self._accepted(DM_ACCEPTS if guild_id is None else guild_id)
        return frozenset(item.plugin for item in self._pending(holds, accepted))

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
