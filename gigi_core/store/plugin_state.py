"""Per-guild plugin enablement and config; secret config fields are sealed, never stored plain."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select

from gigi_core.store.db import Database
from gigi_core.store.secrets import SecretStore
from gigi_core.store.tables import GuildPlugin, utcnow

SECRET_SCOPE = "plugin_config"


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
    """

    def __init__(
        self,
        db: Database,
        secrets: SecretStore,
        *,
        on_by_default: frozenset[str] = frozenset(),
        on_change: Callable[[], None] = lambda: None,
    ) -> None:
        self.db = db
        self.secrets = secrets
        self.on_by_default = on_by_default
        self.on_change = on_change  # clears cached policy facts

    async def get(self, guild_id: str, plugin: str) -> PluginState | None:
        async with self.db.session() as s:
            row = await s.get(GuildPlugin, (guild_id, plugin))
            if row is None:
                if plugin in self.on_by_default:
                    return PluginState(guild_id, plugin, enabled=True, allow_external=False)
                return None
            fps = await self.secrets.fingerprints(SECRET_SCOPE, _owner(guild_id, plugin), s)
            return PluginState(
                guild_id, plugin, row.enabled, row.allow_external, dict(row.config or {}), fps
            )

    async def enabled_plugins(self, guild_id: str) -> list[str]:
        async with self.db.session() as s:
            rows = (
                await s.execute(
                    select(GuildPlugin.plugin, GuildPlugin.enabled).where(
                        GuildPlugin.guild_id == guild_id
                    )
                )
            ).all()
        stored = {plugin: enabled for plugin, enabled in rows}
        defaults = {p for p in self.on_by_default if p not in stored}
        return sorted({p for p, enabled in stored.items() if enabled} | defaults)

    async def known_guild(self, guild_id: str) -> bool:
        async with self.db.session() as s:
            row = await s.scalar(select(GuildPlugin.plugin).where(GuildPlugin.guild_id == guild_id))
            return row is not None

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
        """Upsert in one transaction; ``secrets`` are sealed (bound to guild and plugin)."""
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
            if enabled is not None:
                row.enabled = enabled
            if allow_external is not None:
                row.allow_external = allow_external
            if config is not None:
                row.config = config
            row.updated_by = by
            row.updated_at = utcnow()
            for name, value in (secrets or {}).items():
                await self.secrets.put(SECRET_SCOPE, _owner(guild_id, plugin), name, value, s)
        self.on_change()

    async def unsealed_secrets(self, guild_id: str, plugin: str) -> dict[str, str]:
        """Only for handing config to the plugin's own handler; never for display."""
        async with self.db.session() as s:
            return await self.secrets.open_all(SECRET_SCOPE, _owner(guild_id, plugin), s)


def _owner(guild_id: str, plugin: str) -> str:
    return f"{guild_id}/{plugin}"
