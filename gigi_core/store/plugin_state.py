"""Per-guild plugin enablement and config; secret config fields are sealed, never stored plain.

Each row records the *identity* of the plugin that saved it: its distribution name (or
``default:NAME`` / ``inline:NAME`` for the kernel's and in-process plugins). A plugin that
reuses another one's name therefore inherits neither its enablement nor its config: a row
saved by another identity is refused loudly (:class:`PluginStateClash`) and counts as not
enabled. Sealed config of a distribution's plugin is also sealed for the distribution
(``GUILD/PLUGIN@DISTRIBUTION`` is part of the ciphertext's associated data).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from gigi_core.errors import ConfigError
from gigi_core.store.db import Database
from gigi_core.store.secrets import SecretStore
from gigi_core.store.tables import GuildPlugin, SealedSecret, utcnow

log = logging.getLogger(__name__)
SECRET_SCOPE = "plugin_config"


class PluginStateClash(ConfigError):
    """The guild's saved state of a plugin belongs to another distribution of that name."""

    def __init__(self, guild_id: str, plugin: str, saved_by: str, loaded: str) -> None:
        super().__init__(
            f"plugin {plugin!r} in guild {guild_id} was set up by {saved_by}, but the loaded "
            f"{plugin!r} comes from {loaded}: its settings and sealed config are not handed "
            "over",
            hint=f"uninstall the distribution that should not be named {plugin!r}",
        )
        self.guild_id, self.plugin, self.saved_by, self.loaded = guild_id, plugin, saved_by, loaded


@dataclass(frozen=True)
class PluginState:
    guild_id: str
    plugin: str
    enabled: bool
    allow_external: bool
    config: dict[str, Any] = field(default_factory=dict)  # without secret fields
    secret_fields: dict[str, str] = field(default_factory=dict)  # field -> fingerprint


class PluginStateStore:
    """Per-guild plugin rows; ``on_by_default`` plugins count as enabled until a row says no.

    ``on_by_default`` holds the plugin names of the kernel's own default plugins (the native
    tools): every guild has them without an admin enabling each one, and an admin can still
    turn one off, which stores an ``enabled = false`` row like any other plugin.

    ``identity_of(plugin)`` names who the loaded plugin of that name is (the kernel passes
    ``Registry.distribution_of``); None means unknown, and then no row is refused.
    """

    def __init__(
        self,
        db: Database,
        secrets: SecretStore,
        *,
        on_by_default: frozenset[str] = frozenset(),
        on_change: Callable[[], None] = lambda: None,
        identity_of: Callable[[str], str | None] = lambda plugin: None,
    ) -> None:
        self.db = db
        self.secrets = secrets
        self.on_by_default = on_by_default
        self.on_change = on_change  # clears cached policy facts
        self.identity_of = identity_of
        self._reported: set[tuple[str, str, str]] = set()

    # -- the distribution check ------------------------------------------------------------

    def clash(self, guild_id: str, plugin: str, saved_by: str | None) -> PluginStateClash | None:
        """The refusal for a row saved by ``saved_by``, or None when it is this plugin's."""
        loaded = self.identity_of(plugin)
        if saved_by is None or loaded is None or saved_by == loaded:
            return None
        error = PluginStateClash(guild_id, plugin, saved_by, loaded)
        key = (guild_id, plugin, loaded)
        if key not in self._reported:  # loudly, once per process and guild
            self._reported.add(key)
            log.error("%s", error)
        return error

    def usable(self, guild_id: str, plugin: str, saved_by: str | None) -> bool:
        return self.clash(guild_id, plugin, saved_by) is None

    def _check(self, row: GuildPlugin) -> None:
        error = self.clash(row.guild_id, row.plugin, row.distribution)
        if error is not None:
            raise error

    def _owners(self, guild_id: str, plugin: str) -> tuple[str, str]:
        """(where this plugin's secrets are sealed now, where older Gigi sealed them)."""
        legacy = f"{guild_id}/{plugin}"
        identity = self.identity_of(plugin)
        if identity is None or ":" in identity:  # not a distribution: the row guards it
            return legacy, legacy
        return f"{legacy}@{identity}", legacy

    # -- reads -------------------------------------------------------------------------------

    async def get(self, guild_id: str, plugin: str) -> PluginState | None:
        """The state, or None; raises PluginStateClash when another distribution saved it."""
        async with self.db.session() as s:
            row = await s.get(GuildPlugin, (guild_id, plugin))
            if row is None:
                if plugin in self.on_by_default:
                    return PluginState(guild_id, plugin, enabled=True, allow_external=False)
                return None
            self._check(row)
            fps = await self._fingerprints(s, guild_id, plugin)
            return PluginState(
                guild_id, plugin, row.enabled, row.allow_external, dict(row.config or {}), fps
            )

    async def enabled_plugins(self, guild_id: str) -> list[str]:
        async with self.db.session() as s:
            rows = (
                await s.execute(
                    select(GuildPlugin.plugin, GuildPlugin.enabled, GuildPlugin.distribution).where(
                        GuildPlugin.guild_id == guild_id
                    )
                )
            ).all()
        stored = {plugin: enabled for plugin, enabled, _ in rows}
        defaults = {p for p in self.on_by_default if p not in stored}
        return sorted(
            {p for p, enabled, by in rows if enabled and self.usable(guild_id, p, by)} | defaults
        )

    async def known_guild(self, guild_id: str) -> bool:
        async with self.db.session() as s:
            row = await s.scalar(select(GuildPlugin.plugin).where(GuildPlugin.guild_id == guild_id))
            return row is not None

    async def unsealed_secrets(self, guild_id: str, plugin: str) -> dict[str, str]:
        """Only for handing config to the plugin's own handler; never for display."""
        async with self.db.session() as s:
            row = await s.get(GuildPlugin, (guild_id, plugin))
            if row is not None:
                self._check(row)
            current, legacy = self._owners(guild_id, plugin)
            opened = await self.secrets.open_all(SECRET_SCOPE, current, s)
            if legacy != current and row is not None:  # sealed before distributions were kept
                older = await self.secrets.open_all(SECRET_SCOPE, legacy, s)
                opened = {**older, **opened}
            return opened

    async def _fingerprints(self, s: AsyncSession, guild_id: str, plugin: str) -> dict[str, str]:
        current, legacy = self._owners(guild_id, plugin)
        fps = await self.secrets.fingerprints(SECRET_SCOPE, current, s)
        if legacy != current:
            fps = {**await self.secrets.fingerprints(SECRET_SCOPE, legacy, s), **fps}
        return fps

    # -- writes ------------------------------------------------------------------------------

    async def save(
        self,
        guild_id: str,
        plugin: str,
        *,
        enabled: bool | None = None,
        allow_external: bool | None = None,
        config: dict[str, Any] | None = None,
        secrets: dict[str, str] | None = None,
        by: str | None = None,
    ) -> None:
        """Upsert in one transaction; ``secrets`` are sealed (bound to guild, plugin and
        distribution). Refuses (PluginStateClash) a row another distribution saved.

        Two processes saving a guild's first row at once: the loser's INSERT clashes on the
        key, and it runs again, now updating the row the other one stored."""
        from sqlalchemy.exc import IntegrityError

        args = (guild_id, plugin, enabled, allow_external, config, secrets, by)
        try:
            await self._save(*args)
        except IntegrityError:
            await self._save(*args)
        self.on_change()

    async def _save(
        self,
        guild_id: str,
        plugin: str,
        enabled: bool | None,
        allow_external: bool | None,
        config: dict[str, Any] | None,
        secrets: dict[str, str] | None,
        by: str | None,
    ) -> None:
        async with self.db.session() as s:
            row = await s.get(GuildPlugin, (guild_id, plugin), with_for_update=True)
            if row is None:
                row = GuildPlugin(
                    guild_id=guild_id,
                    plugin=plugin,
                    enabled=plugin in self.on_by_default,
                    allow_external=False,
                    config={},
                )
                s.add(row)
            else:
                self._check(row)
            row.distribution = self.identity_of(plugin) or row.distribution
            if enabled is not None:
                row.enabled = enabled
            if allow_external is not None:
                row.allow_external = allow_external
            if config is not None:
                row.config = config
            row.updated_by = by
            row.updated_at = utcnow()
            current, legacy = self._owners(guild_id, plugin)
            for name, value in (secrets or {}).items():
                await self.secrets.put(SECRET_SCOPE, current, name, value, s)
                if legacy != current:  # the older copy must not outlive its replacement
                    await s.execute(
                        delete(SealedSecret).where(
                            SealedSecret.scope == SECRET_SCOPE,
                            SealedSecret.owner == legacy,
                            SealedSecret.name == name,
                        )
                    )

    async def adopt_unbound(self, plugins: dict[str, str]) -> int:
        """Bind rows saved before distributions were recorded to the plugins loaded now.

        ``plugins`` maps plugin name -> identity. Run at start-up, so an older row goes to the
        first plugin of its name that loads after the upgrade, and never to a later one.
        """
        async with self.db.session() as s:
            unbound = set(
                await s.scalars(
                    select(GuildPlugin.plugin).where(GuildPlugin.distribution.is_(None)).distinct()
                )
            )
            bound = 0
            for plugin in sorted(unbound & set(plugins)):
                result = await s.execute(
                    update(GuildPlugin)
                    .where(GuildPlugin.plugin == plugin, GuildPlugin.distribution.is_(None))
                    .values(distribution=plugins[plugin])
                )
                bound += result.rowcount or 0
        if bound:
            log.info("bound %d saved plugin state row(s) to the distributions loaded now", bound)
            self.on_change()
        return bound
