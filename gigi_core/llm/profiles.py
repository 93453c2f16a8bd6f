"""Model profiles (one per owner and purpose) and guild LLM policies.

A profile names a credential of the *same* owner and a model; its optional fallback model
runs on that same credential. Nothing here can point one owner's profile at another
owner's key, which is what keeps billing owners from mixing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from gigi_core.llm.records import (
    PERSONAL_KEYS,
    GuildPolicy,
    LlmConfigError,
    Owner,
    ProfileInfo,
    check_purpose,
)
from gigi_core.store.llm_tables import LlmCredential, LlmGuildPolicy, LlmModelProfile
from gigi_core.store.tables import utcnow

if TYPE_CHECKING:
    from gigi_core.store.db import Database

MAX_MODEL = 200


def check_model(model: str, option: str = "model") -> str:
    """Model ids are free strings: only emptiness and length are checked here."""
    model = model.strip()
    if not model or len(model) > MAX_MODEL:
        raise LlmConfigError(f"invalid {option} {model!r}", hint=f"1-{MAX_MODEL} characters")
    return model


def _info(profile: LlmModelProfile, cred: LlmCredential) -> ProfileInfo:
    return ProfileInfo(
        owner=Owner(profile.owner_type, profile.owner_id),  # type: ignore[arg-type]
        purpose=profile.purpose,
        credential_id=cred.id,
        credential_label=cred.label,
        provider=cred.provider,
        model=profile.model,
        fallback_model=profile.fallback_model,
        params=dict(profile.params or {}),
        enabled=profile.enabled,
        selected_by=profile.selected_by,
        budget_fallback_model=profile.budget_fallback_model,
        input_price=profile.input_price,
        output_price=profile.output_price,
        currency=profile.currency,
    )


class ProfileStore:
    """Set, list and look up model profiles."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def set(
        self,
        owner: Owner,
        purpose: str,
        credential_label: str,
        model: str,
        *,
        fallback_model: str | None = None,
        params: dict[str, Any] | None = None,
        enabled: bool = True,
        by: str | None = None,
        budget_fallback_model: str | None = None,
        input_price: float | None = None,
        output_price: float | None = None,
        currency: str | None = None,
    ) -> ProfileInfo:
        """Create or replace the owner's profile for ``purpose``."""
        from gigi_core.llm.budget_money import check_prices

        prices = check_prices(input_price, output_price, currency)
        purpose = check_purpose(purpose)
        model = check_model(model)
        fallback = check_model(fallback_model, "fallback model") if fallback_model else None
        cheaper = (
            check_model(budget_fallback_model, "budget fallback model")
            if budget_fallback_model
            else None
        )
        async with self.db.session() as s:
            cred = await s.scalar(
                select(LlmCredential).where(
                    LlmCredential.owner_type == owner.type,
                    LlmCredential.owner_id == owner.id,
                    LlmCredential.label == credential_label,
                    LlmCredential.revoked_at.is_(None),
                )
            )
            if cred is None:
                raise LlmConfigError(
                    f"{owner} has no active credential labelled {credential_label!r}",
                    hint=(
                        "a profile can only use a credential of the same owner; add one with "
                        f"`gigi llm credential add --owner {owner} ...`"
                    ),
                )
            row = await s.scalar(self._query(owner, purpose))
            if row is None:
                row = LlmModelProfile(owner_type=owner.type, owner_id=owner.id, purpose=purpose)
                s.add(row)
            row.credential_id, row.model, row.fallback_model = cred.id, model, fallback
            row.params, row.enabled, row.selected_by = dict(params or {}), enabled, by
            row.budget_fallback_model = cheaper
            row.input_price, row.output_price, row.currency = prices
            row.updated_at = utcnow()
            return _info(row, cred)

    async def remove(self, owner: Owner, purpose: str) -> bool:
        """Delete the owner's profile for ``purpose``; False when there was none."""
        purpose = check_purpose(purpose)
        async with self.db.session() as s:
            row = await s.scalar(self._query(owner, purpose))
            if row is None:
                return False
            await s.delete(row)
            return True

    async def get(self, owner: Owner, purpose: str) -> ProfileInfo | None:
        """The owner's enabled profile for ``purpose`` (its credential may be revoked)."""
        async with self.db.session() as s:
            row = await s.scalar(self._query(owner, purpose))
            if row is None or not row.enabled:
                return None
            cred = await s.get(LlmCredential, row.credential_id)
            return _info(row, cred) if cred is not None else None

    async def get_chain(
        self, owner: Owner, purposes: tuple[str, ...]
    ) -> dict[str, ProfileInfo | None]:
        """``get`` for each of ``purposes`` in one statement (a purpose and its fallbacks:
        a cold resolution walked them one read at a time)."""
        query = (
            select(LlmModelProfile, LlmCredential)
            .join(LlmCredential, LlmCredential.id == LlmModelProfile.credential_id)
            .where(
                LlmModelProfile.owner_type == owner.type,
                LlmModelProfile.owner_id == owner.id,
                LlmModelProfile.purpose.in_(purposes),
            )
        )
        found: dict[str, ProfileInfo | None] = dict.fromkeys(purposes)
        async with self.db.session() as s:
            for row, cred in (await s.execute(query)).all():
                if row.enabled:
                    found[row.purpose] = _info(row, cred)
        return found

    async def find(self, owner: Owner | None = None) -> list[ProfileInfo]:
        query = (
            select(LlmModelProfile, LlmCredential)
            .join(LlmCredential, LlmCredential.id == LlmModelProfile.credential_id)
            .order_by(LlmModelProfile.owner_type, LlmModelProfile.owner_id, LlmModelProfile.purpose)
        )
        if owner is not None:
            query = query.where(
                LlmModelProfile.owner_type == owner.type, LlmModelProfile.owner_id == owner.id
            )
        async with self.db.session() as s:
            return [_info(p, c) for p, c in await s.execute(query)]

    @staticmethod
    def _query(owner: Owner, purpose: str) -> Any:
        return select(LlmModelProfile).where(
            LlmModelProfile.owner_type == owner.type,
            LlmModelProfile.owner_id == owner.id,
            LlmModelProfile.purpose == purpose,
        )


class PolicyStore:
    """Guild LLM policies; a guild without a row has the defaults (personal keys off)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def get(self, guild_id: str) -> GuildPolicy:
        async with self.db.session() as s:
            row = await s.get(LlmGuildPolicy, guild_id)
            if row is None:
                return GuildPolicy(guild_id)
            return GuildPolicy(guild_id, row.personal_keys, row.tenant_fallback)  # type: ignore[arg-type]

    async def set(
        self,
        guild_id: str,
        *,
        personal_keys: str | None = None,
        tenant_fallback: bool | None = None,
        by: str | None = None,
    ) -> GuildPolicy:
        """Change only what is given; the rest keeps its current (or default) value."""
        if personal_keys is not None and personal_keys not in PERSONAL_KEYS:
            raise LlmConfigError(
                f"invalid personal-keys policy {personal_keys!r}",
                hint=f"use one of {', '.join(PERSONAL_KEYS)}",
            )
        async with self.db.session() as s:
            row = await s.get(LlmGuildPolicy, guild_id)
            if row is None:
                row = LlmGuildPolicy(guild_id=guild_id, personal_keys="off", tenant_fallback=False)
                s.add(row)
            if personal_keys is not None:
                row.personal_keys = personal_keys
            if tenant_fallback is not None:
                row.tenant_fallback = tenant_fallback
            row.updated_by, row.updated_at = by, utcnow()
            return GuildPolicy(guild_id, row.personal_keys, row.tenant_fallback)  # type: ignore[arg-type]
