"""Sealed secret rows: write-only from the outside; opened only to hand to their owner."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from gigi_core.store.sealing import Sealed, Sealer
from gigi_core.store.tables import SealedSecret, utcnow

if TYPE_CHECKING:
    from gigi_core.store.db import Database


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


async def unopenable_secrets(db: Database, sealer: Sealer) -> list[str]:
    """One sentence per key id that stored secrets need and ``sealer`` lacks (none: all open).

    Reads key ids only (never a ciphertext is opened): plugin config secrets and the active
    LLM credentials.
    """
    from sqlalchemy import func

    from gigi_core.store.llm_tables import LlmCredential

    async with db.session() as s:
        configs = await s.execute(
            select(SealedSecret.key_id, func.count()).group_by(SealedSecret.key_id)
        )
        creds = await s.execute(
            select(LlmCredential.key_id, func.count())
            .where(LlmCredential.revoked_at.is_(None), LlmCredential.ciphertext.is_not(None))
            .group_by(LlmCredential.key_id)
        )
        counts: dict[str, list[int]] = {}
        for key_id, n in configs:
            counts.setdefault(key_id, [0, 0])[0] += n
        for key_id, n in creds:
            counts.setdefault(key_id or "", [0, 0])[1] += n
    known = sealer.key_ids
    warnings = []
    for key_id, (config, credentials) in sorted(counts.items()):
        if key_id in known:
            continue
        total = config + credentials
        parts = [f"{config} plugin config field(s)"] if config else []
        parts += [f"{credentials} LLM credential(s)"] if credentials else []
        error = sealer.missing_key(key_id)
        warnings.append(
            f"{total} stored secret{'s' if total != 1 else ''} sealed with key {key_id} "
            f"({', '.join(parts)}) cannot be opened: {error.hint}"
        )
    return warnings


async def warn_unopenable_secrets(kernel: Any) -> list[str]:
    """Log a warning per missing key (for ``gigi run`` at start-up); returns the warnings."""
    import logging

    warnings = await unopenable_secrets(kernel.db, kernel.sealer)
    for warning in warnings:
        logging.getLogger(__name__).warning("%s", warning)
    return warnings
