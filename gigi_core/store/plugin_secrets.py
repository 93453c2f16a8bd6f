"""``kernel.plugin_secrets(plugin)``: operator-level secrets a plugin keeps sealed in the store.

Per-guild secrets live in a plugin's config (``x-gigi-secret``); a secret that belongs to the
deployment — an MCP server's token, a webhook signing key — goes here: sealed with the
operator's key (AES-256-GCM, bound to plugin and name), re-sealed by ``gigi secrets rotate``,
shown only by fingerprint, opened only for the plugin's own code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, select

from gigi_core.store.tables import SealedSecret

if TYPE_CHECKING:
    from gigi_core.store.db import Database
    from gigi_core.store.secrets import SecretStore

SCOPE = "plugin_secret"


class PluginSecrets:
    def __init__(self, db: Database, store: SecretStore, plugin: str) -> None:
        if not plugin:
            raise ValueError("plugin secrets need the plugin's name")
        self.db, self.store, self.plugin = db, store, plugin

    async def put(self, name: str, value: str) -> str:
        """Seal ``value`` under ``name`` (replacing any earlier one); returns its fingerprint."""
        if not name or len(name) > 128:
            raise ValueError("a secret's name is 1-128 characters")
        async with self.db.session() as s:
            return await self.store.put(SCOPE, self.plugin, name, value, s)

    async def open(self, name: str) -> str | None:
        """The plaintext, for the plugin's own use only (never log or print it); None if unset."""
        from gigi_core.store.sealing import Sealed
        from gigi_core.store.secrets import associated_data

        async with self.db.session() as s:
            row = await s.scalar(self._where().where(SealedSecret.name == name))
        if row is None:
            return None
        sealed = Sealed(row.key_id, row.nonce, row.ciphertext, row.fingerprint)
        return self.store.sealer.open(sealed, associated_data(SCOPE, self.plugin, name))

    async def fingerprints(self) -> dict[str, str]:
        """Name -> fingerprint: what an operator is shown instead of the value."""
        async with self.db.session() as s:
            return await self.store.fingerprints(SCOPE, self.plugin, s)

    async def delete(self, name: str) -> bool:
        async with self.db.session() as s:
            result = await s.execute(
                delete(SealedSecret).where(
                    SealedSecret.scope == SCOPE,
                    SealedSecret.owner == self.plugin,
                    SealedSecret.name == name,
                )
            )
        return bool(result.rowcount)

    def _where(self) -> Any:
        return select(SealedSecret).where(
            SealedSecret.scope == SCOPE, SealedSecret.owner == self.plugin
        )
