"""Credential rows: sealed on the way in, described (never shown) on the way out.

The secret is sealed with the kernel's ``Sealer`` and associated data naming the row id,
owner and provider, so a ciphertext copied onto another row (another guild's, say) fails
to open. ``open_secret`` is the one place a key is unsealed, and only the service's
provider call uses it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from gigi_core.errors import SecretsError
from gigi_core.llm.records import CredentialInfo, CredentialUnusable, LlmConfigError, Owner
from gigi_core.store.llm_tables import LlmCredential, LlmModelProfile
from gigi_core.store.sealing import Sealed, Sealer
from gigi_core.store.tables import utcnow

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from gigi_core.store.db import Database

MAX_LABEL = 64


def associated_data(row: LlmCredential) -> str:
    """Binds a ciphertext to its row, owner, provider and endpoint: a key moved to another
    row, or pointed at another server by editing ``base_url``, no longer opens."""
    bound = (
        f"gigi:llm_credential:{row.id}:{row.owner_type}:{row.owner_id}:{row.provider}"
        f":{row.base_url or ''}"
    )
    # a key added from a surface stays checked: clearing the flag in the table breaks it
    return f"{bound}:url_checked" if row.url_checked else bound


def check_base_url(base_url: str | None) -> str | None:
    """An http(s) URL with a host, or None; anything else is refused before it is stored."""
    if base_url is None:
        return None
    url = base_url.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise LlmConfigError(
            f"invalid base URL {url!r}",
            hint="give an http:// or https:// URL with a host, e.g. http://127.0.0.1:11434/v1",
        )
    if parts.username or parts.password:
        raise LlmConfigError(
            "the base URL must not carry credentials", hint="pass the key with --api-key-*"
        )
    return url.rstrip("/")


def check_label(label: str) -> str:
    label = label.strip()
    if not label or len(label) > MAX_LABEL or any(c.isspace() for c in label):
        raise LlmConfigError(
            f"invalid label {label!r}", hint=f"1-{MAX_LABEL} characters, no spaces"
        )
    return label


def info(row: LlmCredential) -> CredentialInfo:
    return CredentialInfo(
        id=row.id,
        owner=Owner(row.owner_type, row.owner_id),  # type: ignore[arg-type]
        provider=row.provider,
        label=row.label,
        base_url=row.base_url,
        fingerprint_suffix=row.fingerprint[-6:],
        status=row.status,
        last_test_status=row.last_test_status,
        last_tested_at=row.last_tested_at,
        last_error_class=row.last_error_class,
        created_by=row.created_by,
        created_at=row.created_at,
        revoked_at=row.revoked_at,
        url_checked=bool(row.url_checked),
    )


@dataclass(frozen=True)
class CredentialMeta:
    """What a call needs to know about its credential: the listing plus the fingerprint
    (a keyed hash of the secret, never shown) that tells a rotated key from the old one."""

    info: CredentialInfo
    fingerprint: str

    def outcome(self, error_class: str | None, *, tested: bool) -> dict[str, Any] | None:
        """The credential's new status columns after a call, or None when nothing changed.

        Auth and permission errors mark it failing, a success active again; other errors
        are only noted. Tests always record their time and result.
        """
        info = self.info
        status = info.status
        if error_class is None:
            status = "active"
        elif error_class in ("auth", "permission"):
            status = "failing"
        last_error = error_class if error_class is not None else info.last_error_class
        if not tested and status == info.status and last_error == info.last_error_class:
            return None
        now = utcnow()
        values: dict[str, Any] = {
            "status": status,
            "last_error_class": last_error,
            "updated_at": now,
        }
        if tested:
            values["last_test_status"] = "ok" if error_class is None else "error"
            values["last_tested_at"] = now
        return values

    def after(self, values: dict[str, Any]) -> CredentialMeta:
        """This metadata once ``values`` (from ``outcome``) are written."""
        keep = {k: v for k, v in values.items() if k != "updated_at"}
        return CredentialMeta(replace(self.info, **keep), self.fingerprint)


class CredentialStore:
    """Add, list, revoke and update credentials; open a secret only for a provider call."""

    def __init__(self, db: Database, sealer: Sealer) -> None:
        self.db = db
        self.sealer = sealer

    async def add(
        self,
        owner: Owner,
        provider: str,
        label: str,
        secret: str,
        *,
        base_url: str | None = None,
        by: str | None = None,
        url_checked: bool = False,
    ) -> CredentialInfo:
        """Seal and store; refuses (storing nothing) without a key or with a taken label.
        ``url_checked``: its base URL is checked at every call (``url_guard``)."""
        self.sealer.require_key()  # the sealer's own clear error, before anything is written
        if not secret or not secret.strip():
            raise LlmConfigError("the API key is empty", hint="pass a non-empty key")
        label = check_label(label)
        row = LlmCredential(
            id=uuid.uuid4().hex,
            owner_type=owner.type,
            owner_id=owner.id,
            provider=provider,
            label=label,
            base_url=check_base_url(base_url),
            status="active",
            created_by=by,
            updated_by=by,
            url_checked=url_checked,
        )
        sealed = self.sealer.seal(secret.strip(), associated_data(row))
        row.key_id, row.nonce, row.ciphertext = sealed.key_id, sealed.nonce, sealed.ciphertext
        row.fingerprint = sealed.fingerprint
        try:
            async with self.db.session() as s:
                if await self._active(s, owner, label) is not None:
                    raise self._label_taken(owner, label)
                s.add(row)
        except IntegrityError:  # a concurrent add won the partial unique index
            raise self._label_taken(owner, label) from None
        return info(row)

    async def find(
        self, owner: Owner | None = None, *, include_revoked: bool = False
    ) -> list[CredentialInfo]:
        query = select(LlmCredential).order_by(
            LlmCredential.owner_type, LlmCredential.owner_id, LlmCredential.label
        )
        if owner is not None:
            query = query.where(
                LlmCredential.owner_type == owner.type, LlmCredential.owner_id == owner.id
            )
        if not include_revoked:
            query = query.where(LlmCredential.revoked_at.is_(None))
        async with self.db.session() as s:
            return [info(r) for r in await s.scalars(query)]

    async def get(self, owner: Owner, label: str) -> CredentialInfo:
        async with self.db.session() as s:
            return info(await self._require_active(s, owner, label))

    async def get_by_id(self, credential_id: str) -> CredentialInfo | None:
        async with self.db.session() as s:
            row = await s.get(LlmCredential, credential_id)
            return info(row) if row is not None else None

    async def meta(self, credential_id: str) -> CredentialMeta | None:
        async with self.db.session() as s:
            row = await s.get(LlmCredential, credential_id)
            return CredentialMeta(info(row), row.fingerprint) if row is not None else None

    async def rotate(
        self, owner: Owner, label: str, secret: str, *, by: str | None = None
    ) -> CredentialInfo:
        """Replace the key of an active credential in place: its profiles keep pointing at it.

        The new key is sealed under the same row (same associated data), gets a new
        fingerprint, and the credential is active again with its last error cleared.
        """
        self.sealer.require_key()
        if not secret or not secret.strip():
            raise LlmConfigError("the API key is empty", hint="pass a non-empty key")
        async with self.db.session() as s:
            row = await self._require_active(s, owner, label)
            sealed = self.sealer.seal(secret.strip(), associated_data(row))
            row.key_id, row.nonce, row.ciphertext = sealed.key_id, sealed.nonce, sealed.ciphertext
            row.fingerprint = sealed.fingerprint
            row.status, row.last_error_class = "active", None
            row.updated_at, row.updated_by = utcnow(), by
            return info(row)

    async def revoke(self, owner: Owner, label: str, *, by: str | None = None) -> list[str]:
        """Revoke and destroy the sealed secret; returns purposes of profiles now unusable."""
        return (await self.revoke_returning_id(owner, label, by=by))[1]

    async def revoke_returning_id(
        self, owner: Owner, label: str, *, by: str | None = None
    ) -> tuple[str, list[str]]:
        """``revoke``, also naming the credential's id (the cache drops its key by id)."""
        async with self.db.session() as s:
            row = await self._require_active(s, owner, label)
            now = utcnow()
            row.status, row.revoked_at, row.updated_at, row.updated_by = "revoked", now, now, by
            row.key_id = row.nonce = row.ciphertext = None
            purposes = await s.scalars(
                select(LlmModelProfile.purpose).where(LlmModelProfile.credential_id == row.id)
            )
            return row.id, sorted(purposes)

    async def open_secret(self, credential_id: str) -> str:
        """The plaintext key, for the provider call only. Never log or return it elsewhere."""
        return (await self.open_secret_and_fingerprint(credential_id))[0]

    async def open_secret_and_fingerprint(self, credential_id: str) -> tuple[str, str]:
        """The plaintext key and the fingerprint it was sealed with (to cache it by both)."""
        async with self.db.session() as s:
            row = await s.get(LlmCredential, credential_id)
            if row is None or row.revoked_at is not None or row.ciphertext is None:
                raise CredentialUnusable(
                    "the credential was revoked",
                    hint="add a new credential and point the profile at it",
                )
            sealed = Sealed(row.key_id or "", row.nonce or b"", row.ciphertext, row.fingerprint)
            try:
                return self.sealer.open(sealed, associated_data(row)), row.fingerprint
            except SecretsError as exc:
                raise CredentialUnusable(
                    f"credential {row.label!r} cannot be unsealed: {exc.message}", hint=exc.hint
                ) from None

    async def _active(self, s: AsyncSession, owner: Owner, label: str) -> LlmCredential | None:
        return await s.scalar(
            select(LlmCredential).where(
                LlmCredential.owner_type == owner.type,
                LlmCredential.owner_id == owner.id,
                LlmCredential.label == label,
                LlmCredential.revoked_at.is_(None),
            )
        )

    async def _require_active(self, s: AsyncSession, owner: Owner, label: str) -> LlmCredential:
        row = await self._active(s, owner, label)
        if row is None:
            raise LlmConfigError(
                f"{owner} has no active credential labelled {label!r}",
                hint=f"see `gigi llm credential list --owner {owner}`",
            )
        return row

    @staticmethod
    def _label_taken(owner: Owner, label: str) -> LlmConfigError:
        return LlmConfigError(
            f"{owner} already has an active credential labelled {label!r}",
            hint="choose another label, or revoke the old credential first",
        )
