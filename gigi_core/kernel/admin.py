"""The kernel's plugin administration: enabling plugins and their per-guild config (secrets
sealed), grants of capabilities, and the manifest lookup whose error names what is loaded.

A mixin of ``Kernel``, kept apart from the wiring that opens and closes it; every method
writes its audit row (metadata only) and clears the cached policy facts it changes.
"""

from __future__ import annotations

import copy
import difflib
import logging
from typing import TYPE_CHECKING, Any

from gigi_core.errors import ConfigError, SecretsError
from gigi_core.store.audit import AuditRecord

if TYPE_CHECKING:
    from gigi_core.llm.cache import LlmCache
    from gigi_core.policy.view import ViewCache
    from gigi_core.registry import Registry
    from gigi_core.store.audit import AuditLog
    from gigi_core.store.grants import GrantStore
    from gigi_core.store.plugin_state import PluginStateStore
    from gigi_core.store.sealing import Sealer

log = logging.getLogger("gigi_core.kernel")  # the name it logged under before the split


class PluginAdmin:
    """Plugins on and off per guild, their config, and grants; ``Kernel`` provides the state."""

    registry: Registry
    sealer: Sealer
    plugin_state: PluginStateStore
    grants: GrantStore
    audit: AuditLog
    views: ViewCache
    config_secrets: LlmCache

    if TYPE_CHECKING:

        async def track(self, name: str, **properties: Any) -> None: ...  # Kernel.track

    async def enable_plugin(
        self,
        guild_id: str,
        plugin: str,
        *,
        config: dict[str, Any] | None = None,
        allow_external: bool | None = None,
        by: str | None = None,
    ) -> None:
        """Enable a loaded plugin in a guild, validating (and sealing) its config first."""
        manifest = self.manifest(plugin)
        if not manifest.plugin.per_server:
            raise ConfigError(
                f"plugin {plugin} serves the whole bot: there is nothing to enable in a server"
            )
        plain, secrets = self.validate_config(plugin, config) if config is not None else (None, {})
        if secrets:
            self.sealer.require_key()
        await self.plugin_state.save(
            guild_id,
            plugin,
            enabled=True,
            allow_external=allow_external,
            config=plain,
            secrets=secrets,
            by=by,
        )
        await self._audit_admin("plugin.enable", guild_id, by, manifest.plugin.name)

    async def disable_plugin(self, guild_id: str, plugin: str, *, by: str | None = None) -> bool:
        """Disable (config kept); False when it was not enabled there, and nothing is written."""
        state = await self.plugin_state.get(guild_id, plugin)
        if state is None or not state.enabled:
            return False
        await self.plugin_state.save(guild_id, plugin, enabled=False, by=by)
        await self._audit_admin("plugin.disable", guild_id, by, plugin)
        return True

    async def configure_plugin(
        self, guild_id: str, plugin: str, config: dict[str, Any], *, by: str | None = None
    ) -> None:
        plain, secrets = self.validate_config(plugin, config)
        if secrets:
            self.sealer.require_key()
        await self.plugin_state.save(guild_id, plugin, config=plain, secrets=secrets, by=by)
        await self._audit_admin("plugin.config", guild_id, by, plugin)

    def validate_config(
        self, plugin: str, config: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, str]]:
        """Validate against the manifest's config_schema (and a config model, if registered)."""
        from gigi_core.plugin_config import validate_config

        return validate_config(
            plugin, self.manifest(plugin), self.registry.config_models.get(plugin), config
        )

    async def plugin_config(
        self, guild_id: str, plugin: str, *, plain: dict[str, Any] | None = None
    ) -> Any:
        """The config a handler sees: plain fields plus unsealed secrets, as the model if any.

        ``plain`` (already read by the caller) skips the state read; secrets are read only
        when the manifest declares secret fields.
        """
        if plain is not None:
            manifest = self.registry.manifests.get(plugin)
            secret = manifest is not None and bool(manifest.plugin.secret_fields())
            config = copy.deepcopy(plain)  # the caller's copy may be cached: never share it
        else:
            state = await self.plugin_state.get(guild_id, plugin)
            config = dict(state.config) if state else {}
            secret = bool(state and state.secret_fields)
        if secret:
            config.update(await self._config_secrets(guild_id, plugin))
        model = self.registry.config_models.get(plugin)
        return model.model_validate(config) if model is not None else config

    async def _config_secrets(self, guild_id: str, plugin: str) -> dict[str, str]:
        """The plugin's unsealed config secrets, kept for a few seconds in memory only.

        A change saved through this kernel drops them before it returns, and a read that a
        change overtook is read again, so a replaced or removed secret is never handed out
        after its change returned.
        """
        import json

        key = f"{guild_id}/{plugin}"
        # Keyed by the policy facts' generation too: whatever clears them (a change here, in
        # another process through the change feed, a guild purge) makes a kept copy stale.
        kept = self.config_secrets.secret(key, str(self.views.generation))
        if kept is not None:
            return dict(json.loads(kept))
        while True:
            epoch, generation = self.config_secrets.epoch(key), self.views.generation
            try:
                opened = await self.plugin_state.unsealed_secrets(guild_id, plugin)
            except SecretsError:
                log.error("cannot unseal config secrets of %s in guild %s", plugin, guild_id)
                raise
            if self.config_secrets.epoch(key) == epoch and self.views.generation == generation:
                self.config_secrets.keep_secret(key, str(generation), json.dumps(opened), epoch)
                return opened

    async def add_grant(
        self,
        guild_id: str,
        capability: str,
        subject_type: str,
        subject_id: str,
        *,
        by: str | None = None,
    ) -> bool:
        """Grant a known capability (or wildcard); False when it already existed."""
        self.check_capability_name(capability)
        created = await self.grants.add(guild_id, capability, subject_type, subject_id, by)
        await self.audit.record(
            AuditRecord(
                kind="grant.add",
                status="ok" if created else "noop",
                actor_id=by,
                guild_id=guild_id,
                capability=capability,
            )
        )
        return created

    async def remove_grant(
        self,
        guild_id: str,
        capability: str,
        subject_type: str,
        subject_id: str,
        *,
        by: str | None = None,
    ) -> None:
        if not await self.grants.remove(guild_id, capability, subject_type, subject_id):
            raise ConfigError(
                f"no grant of {capability} to {subject_type} {subject_id} in guild {guild_id}"
            )
        await self.audit.record(
            AuditRecord(
                kind="grant.remove",
                status="ok",
                actor_id=by,
                guild_id=guild_id,
                capability=capability,
            )
        )

    def check_capability_name(self, capability: str) -> None:
        from gigi_core.policy.capabilities import matches

        known = self.registry.capabilities
        if capability == "*" or capability in known:
            return
        if capability.endswith(".*") and any(matches(capability, c) for c in known):
            return
        raise ConfigError(f"unknown capability {capability!r}; known: {', '.join(sorted(known))}")

    def manifest(self, plugin: str) -> Any:
        """The loaded manifest of a plugin, or a ConfigError an admin can act on."""
        manifest = self.registry.manifests.get(plugin)
        if manifest is None:
            record = self.registry.records.get(plugin)
            if record is not None and record.status == "failed":
                raise ConfigError(f"plugin {plugin} failed to load: {record.error}")
            known = ", ".join(sorted(self.registry.manifests)) or "none"
            close = difflib.get_close_matches(plugin, list(self.registry.manifests), n=3)
            guess = f"; did you mean {', '.join(close)}?" if close else ""
            raise ConfigError(f"no loaded plugin is named {plugin!r} (loaded: {known}){guess}")
        return manifest

    async def _audit_admin(self, kind: str, guild_id: str, by: str | None, plugin: str) -> None:
        await self.audit.record(
            AuditRecord(kind=kind, status="ok", actor_id=by, guild_id=guild_id, action=plugin)
        )
        await self.track(kind, guild_id=guild_id, plugin=plugin)
