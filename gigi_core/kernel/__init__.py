"""The Kernel: loaded plugins, store, policy and the tool-call path in one object.

This module opens, wires and closes it; plugin administration (enabling, config, grants)
is the ``PluginAdmin`` mixin in ``gigi_core.kernel.admin``.
"""

from __future__ import annotations

import functools
import logging
import sys
from pathlib import Path
from typing import Any

from gigi_core.events import ChannelSecured, Event
from gigi_core.history import HistoryReaders
from gigi_core.hooks import HookRunner
from gigi_core.kernel.admin import PluginAdmin
from gigi_core.observers import EventBus
from gigi_core.outbox import Outbox
from gigi_core.plugins import LoadedPlugins, LoadOptions, load_plugins
from gigi_core.policy.actor import Actor
from gigi_core.policy.engine import PolicyEngine
from gigi_core.policy.view import ViewCache
from gigi_core.registry import Registry
from gigi_core.settings import Settings
from gigi_core.store.audit import AuditLog, AuditRecord
from gigi_core.store.changes import Change, ChangeFeed, clear_caches_on_changes
from gigi_core.store.channels import ChannelChange, ChannelStateStore
from gigi_core.store.db import Database, resolve_url
from gigi_core.store.grants import GrantStore
from gigi_core.store.limits import RateLimits
from gigi_core.store.plugin_secrets import PluginSecrets
from gigi_core.store.plugin_state import PluginStateStore
from gigi_core.store.sealing import Sealer
from gigi_core.store.secrets import SecretStore
from gigi_core.tools.context import ChannelLister, ToolOutcome

log = logging.getLogger(__name__)


class Kernel(PluginAdmin):
    """Start with ``await Kernel.open()``; end with ``await kernel.close()``."""

    def __init__(
        self, settings: Settings, plugins: LoadedPlugins, db: Database, sealer: Sealer
    ) -> None:
        self.settings = settings
        self.pm = plugins.pm
        self.registry: Registry = plugins.registry
        self.hooks = HookRunner(self.pm)
        self.db = db
        self.sealer = sealer
        self.secrets = SecretStore(sealer)
        # The kernel's default plugins (native tools) are on in every guild until disabled.
        on_by_default = frozenset(
            m.plugin.name
            for r in self.registry.records.values()
            if r.source == "default" and r.status == "ok"
            for m in r.manifests
        )
        self.views = ViewCache()
        from gigi_core.llm.cache import LlmCache

        # Unsealed config secrets per (guild, plugin): the LLM keys' mechanism, kept as long
        # as policy facts (a change elsewhere applies within the same time), no facts half.
        self.config_secrets = LlmCache(ttl=0.0, secret_ttl=self.views.ttl)
        self.events = EventBus(self)
        self.history = HistoryReaders()
        self.outbox = Outbox(self)
        self.plugin_state = PluginStateStore(
            db, self.secrets, on_by_default=on_by_default, on_change=self._facts_changed
        )
        self.changes = ChangeFeed(db)
        self.channels = ChannelStateStore(db, on_change=self._channel_changed)
        self.grants = GrantStore(db, on_change=self._facts_changed)
        self.audit = AuditLog(db)
        self.limits = RateLimits(db, hasher=lambda data: self.state_sealer.keyed_hash(data))
        self.policy = PolicyEngine(self)
        self.withdrawn: dict[str, str] = {}  # action -> why (withdraw_action)
        clear_caches_on_changes(self)
        self._closed = False

    @classmethod
    async def open(
        cls,
        database_url: str | None = None,
        home: str | Path | None = None,
        *,
        plugins: LoadedPlugins | None = None,
        load: list[str] | None = None,
        extra_plugins: list[tuple[str, object]] | None = None,
        sealer: Sealer | None = None,
        migrate: bool = True,
    ) -> Kernel:
        """Load plugins, connect, migrate, run ``startup`` hooks."""
        from gigi_core.store import migrate as migrations

        settings = Settings.resolve(database_url, home)
        if plugins is None:
            options = LoadOptions.from_env(
                load=frozenset(load) if load is not None else None,
                cache_dir=settings.home / "cache" / "manifests",
            )
            plugins = load_plugins(options, extra=extra_plugins or ())
        db = Database(resolve_url(settings.database_url, settings.home))
        try:
            if migrate:
                await migrations.upgrade(db, plugins.registry.migrations)
            else:
                await db.check()
        except BaseException:
            await db.close()
            raise
        try:
            kernel = cls(
                settings,
                plugins,
                db,
                sealer or Sealer.from_env(home=settings.home, database_url=settings.database_url),
            )
            # Saved plugin state is bound to the distribution that saved it; rows from before
            # that was recorded go to the plugin of their name loaded now.
            registry = kernel.registry
            kernel.plugin_state.identity_of = registry.distribution_of
            await kernel.plugin_state.adopt_unbound(
                {name: registry.distribution_of(name) or name for name in registry.manifests}
            )
        except BaseException:
            await db.close()
            raise
        # A startup past its deadline (GIGI_HOOK_TIMEOUT_STARTUP_SECONDS) is cancelled and
        # its plugin marked failed, as if it had not loaded; the kernel goes on without it.
        for late in await kernel.hooks.notify("startup", kernel=kernel):
            error = (
                f"startup did not finish within {late.seconds:g}s "
                "(GIGI_HOOK_TIMEOUT_STARTUP_SECONDS); the plugin was stopped"
            )
            log.error("plugin %s failed: %s", late.plugin, error)
            plugin = kernel.pm.get_plugin(late.plugin)
            if plugin is not None:
                kernel.pm.unregister(plugin)
            kernel.registry.fail(late.plugin, error)
            kernel.views.clear()
        return kernel

    @functools.cached_property
    def state_sealer(self) -> Sealer:
        """Seals agent-run state; see ``gigi_core.store.sealing.state_sealer``."""
        from gigi_core.store.sealing import state_sealer

        return state_sealer(self.settings.home, self.sealer)

    @functools.cached_property
    def agent(self) -> Any:
        """The agent runtime (``gigi_core.agent.runtime.AgentRuntime``)."""
        from gigi_core.agent.runtime import AgentRuntime

        return AgentRuntime(self)

    @functools.cached_property
    def llm(self) -> Any:
        """Credentials, model profiles, resolution and usage (``gigi_core.llm.service``)."""
        from gigi_core.llm.service import LlmService

        return LlmService(self)

    @functools.cached_property
    def commands(self) -> Any:
        """Every loaded plugin's manifest-declared commands (``gigi_core.commands.CommandTable``)."""
        from gigi_core.commands.table import build_table

        return build_table(self.registry)[0]

    @functools.cached_property
    def reviews(self) -> Any:
        """Plugin upgrades' held-back actions (``gigi_core.store.plugin_reviews``)."""
        from gigi_core.store.plugin_reviews import PluginReviews

        return PluginReviews(self.db, self.registry, on_change=self._facts_changed)

    @functools.cached_property
    def jobs(self) -> Any:
        """Background jobs: defer, list, cancel, retry, and the worker (``gigi_core.jobs``)."""
        from gigi_core.jobs.service import JobService

        return JobService(self)

    @functools.cached_property
    def privacy(self) -> Any:
        """Export and delete a member's data across the kernel and every plugin."""
        from gigi_core.privacy.service import PrivacyService

        return PrivacyService(self)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if "gigi_core.agent.leases" in sys.modules:  # no run-lease heartbeat from here on
            sys.modules["gigi_core.agent.leases"].close_leases(self)
        await self.changes.close()
        await self.events.close()
        if "jobs" in self.__dict__:
            await self.jobs.close()
        await self.hooks.notify("shutdown", kernel=self)
        if "llm" in self.__dict__:  # budget alerts still being posted go out first
            await self.llm.close()
        await self.db.close()
        if "gigi_core.llm.client" in sys.modules:  # only if something used a provider
            from gigi_core.llm.client import close_shared_http_client

            await close_shared_http_client()

    async def __aenter__(self) -> Kernel:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- events ------------------------------------------------------------------------

    async def publish(self, event: Event) -> None:
        """Deliver a surface event to the plugins enabled in its guild; returns at once.

        Each observing plugin has its own bounded queue: a slow or failing observer never
        delays the caller or another plugin. The kernel never stores an event's text.
        """
        self.events.publish_nowait(event)
        if type(event).__name__ in ("GuildLeft", "GuildJoined", "MemberLeft", "ChannelDeleted"):
            await self.privacy.on_lifecycle(event)

    async def set_channel_state(
        self, guild_id: str, channel_id: str, state: str, *, by: str | None = None
    ) -> ChannelChange:
        """Pause, resume or secure a channel for every observer; audited."""
        change = await self.channels.set(guild_id, channel_id, state, by=by)
        if change.after == "secure" and change.before != "secure":
            await self.publish(ChannelSecured(guild_id=guild_id, channel_id=channel_id, by=by))
            self.changes.tell(
                Change("channel.secured", guild_id, {"channel": channel_id, "by": by})
            )
        await self.audit.record(
            AuditRecord(
                kind="channel.state",
                status=change.after,
                actor_id=by,
                guild_id=guild_id,
                channel_id=channel_id,
                capability="gigi.channel.manage",
            )
        )
        await self.track("channel.state", guild_id=guild_id, state=change.after)
        return change

    def _facts_changed(self) -> None:
        self.views.clear()
        self.config_secrets.retire_all()
        self.events.invalidate()
        self.changes.tell(Change("facts"))

    def _channel_changed(self, guild_id: str) -> None:
        self.events.invalidate(guild_id)
        self.changes.tell(Change("channel", guild_id))

    async def actor_from_event(self, event: Any, surface: str) -> Actor | None:
        """Ask plugins (firstresult) who is behind a surface event; None if nobody knows."""
        return await self.hooks.first("actor_from_event", event=event, surface=surface)

    async def channel_retention(self, guild_id: str, channel_id: str) -> int | None:
        """How long the guild's memory keeps this channel's messages: the shortest answer of
        ``channel_retention`` (days), or None when no plugin keeps them. Another plugin stores
        message text no longer than that, and not at all on None."""
        answers = await self.hooks.call_all(
            "channel_retention", guild_id=guild_id, channel_id=channel_id, kernel=self
        )
        days = [a for a in answers if isinstance(a, int) and not isinstance(a, bool) and a > 0]
        return min(days) if days else None

    async def track(self, name: str, **properties: Any) -> None:
        """Fan a metadata-only event out to ``track_event`` implementations."""
        await self.hooks.notify("track_event", name=name, properties=properties, kernel=self)

    # -- tools -------------------------------------------------------------------------

    async def call_tool(
        self,
        action: str,
        args: Any,
        *,
        actor: Actor,
        guild_id: str,
        channel_id: str | None = None,
        channel_visible: bool | None = None,
        run_id: str | None = None,
        visible_channels: ChannelLister | None = None,
    ) -> ToolOutcome:
        """Validate, decide, execute and audit one call; raises ToolError subclasses.

        ``visible_channels`` answers the handler's ``ctx.visible_channels()``.
        """
        from gigi_core.tools.invoke import call_tool

        return await call_tool(
            self,
            action,
            args,
            actor=actor,
            guild_id=guild_id,
            channel_id=channel_id,
            channel_visible=channel_visible,
            run_id=run_id,
            channel_lister=visible_channels,
        )

    def plugin_secrets(self, plugin: str) -> PluginSecrets:
        """Operator-level secrets of ``plugin``, sealed in the store (put, open, fingerprints)."""
        return PluginSecrets(self.db, self.secrets, plugin)

    def withdraw_action(self, action: str, reason: str) -> None:
        """Stop offering and allowing ``action`` in this process until reinstated, at once:
        for a plugin whose tool changed under it (an MCP server's rug pull mid-run)."""
        self.withdrawn[action] = reason
        self.views.clear()  # the offered tools are cached with the policy facts

    def reinstate_action(self, action: str) -> None:
        if self.withdrawn.pop(action, None) is not None:
            self.views.clear()
