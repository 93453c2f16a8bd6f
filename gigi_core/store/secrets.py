"""Sealed secret rows: write-only from the outside; opened only to hand to their owner."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from gigi_core.store.sealing import Sealed, Sealer
from gigi_core.store.tables import SealedSecret, utcnow


def associated_data(scope: str, owner: str, name: str) -> str:
    """Binds ciphertext to its row: a row copied elsewhere fails to open."""
    return f"gigi:{scope}:{owner}:{name}"


class SecretStore:
    def __init__(self, sealer: Sealer) -> None:
        self.sealer = sealer

    async def put(self, scope: str, owner: str, name: str, value: str, s: AsyncSession) -> str:
        sealed = self.sealer.seal(value, associated_data(scope, owner, name))
        row = await s.scalar(
            select(SealedSecret).where(
                SealedSecret.scope == scope, SealedSecret.owner == owner, SealedSecret.name == name
            )
        )
        if row is None:
            row = SealedSecret(scope=scope, owner=owner, name=name)
            s.add(row)
        row.key_id, row.nonce, row.ciphertext = sealed.key_id, sealed.nonce, sealed.ciphertext
        row.fingerprint = sealed.fingerprint
        row.updated_at = utcnow()
        return sealed.fingerprint

    async def fingerprints(self, scope: str, owner: str, s: AsyncSession) -> dict[str, str]:
        rows = await s.execute(
            select(SealedSecret.name, SealedSecret.fingerprint).where(
                SealedSecret.scope == scope, SealedSecret.owner == owner
            )
        )
        return {name: fp for name, fp in rows}

    async def open_all(self, scope: str, owner: str, s: AsyncSession) -> dict[str, str]:
        rows = await s.scalars(
            select(SealedSecret).where(SealedSecret.scope == scope, SealedSecret.owner == owner)
        )
        return {
            r.name: self.sealer.open(
                Sealed(r.key_id, r.nonce, r.ciphertext, r.fingerprint),
                associated_data(scope, owner, r.name),
            )
            for r in rows
        }

    async def rotate(self, s: AsyncSession) -> int:
        """Re-seal every row not under the current key; returns how many changed."""
        current = self.sealer.require_key()
        changed = 0
        for row in await s.scalars(select(SealedSecret).where(SealedSecret.key_id != current)):
            ad = associated_data(row.scope, row.owner, row.name)
            plain = self.sealer.open(
                Sealed(row.key_id, row.nonce, row.ciphertext, row.fingerprint), ad
            )
            sealed = self.sealer.seal(plain, ad)
            row.key_id, row.nonce, row.ciphertext = sealed.key_id, sealed.nonce, sealed.ciphertext
            row.updated_at = utcnow()
            changed += 1
        return changed
