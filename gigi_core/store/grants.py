"""Capability grants per guild, to users or roles; wildcards like ``dice.*`` are allowed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, or_, select
from sqlalchemy.exc import IntegrityError

from gigi_core.store.db import Database
from gigi_core.store.tables import CapabilityGrant

if TYPE_CHECKING:
    from gigi_core.policy.actor import Actor


@dataclass(frozen=True)
class Grant:
    guild_id: str
    capability: str
    subject_type: str
    subject_id: str
    granted_by: str | None
    created_at: datetime


class GrantStore:
    def __init__(self, db: Database, *, on_change: Callable[[], None] = lambda: None) -> None:
        self.db = db
        self.on_change = on_change  # clears cached policy facts

    async def add(
        self, guild_id: str, capability: str, subject_type: str, subject_id: str, by: str | None
    ) -> bool:
        """Returns False when the same grant already existed."""
        try:
            async with self.db.session() as s:
                s.add(
                    CapabilityGrant(
                        guild_id=guild_id,
                        capability=capability,
                        subject_type=subject_type,
                        subject_id=subject_id,
                        granted_by=by,
                    )
                )
        except IntegrityError:
            return False
        self.on_change()
        return True

    async def remove(
        self, guild_id: str, capability: str, subject_type: str, subject_id: str
    ) -> bool:
        async with self.db.session() as s:
            result = await s.execute(
                delete(CapabilityGrant).where(
                    CapabilityGrant.guild_id == guild_id,
                    CapabilityGrant.capability == capability,
                    CapabilityGrant.subject_type == subject_type,
                    CapabilityGrant.subject_id == subject_id,
                )
            )
        self.on_change()
        return bool(result.rowcount)

    async def list(self, guild_id: str) -> list[Grant]:
        async with self.db.session() as s:
            rows = await s.scalars(
                select(CapabilityGrant)
                .where(CapabilityGrant.guild_id == guild_id)
                .order_by(
                    CapabilityGrant.capability,
                    CapabilityGrant.subject_type,
                    CapabilityGrant.subject_id,
                )
            )
            return [
                Grant(
                    r.guild_id,
                    r.capability,
                    r.subject_type,
                    r.subject_id,
                    r.granted_by,
                    r.created_at,
                )
                for r in rows
            ]

    async def for_actor(self, guild_id: str, actor: Actor) -> set[str]:
        """Capability patterns granted to this user or any of their roles in this guild."""
        async with self.db.session() as s:
            return set(await s.scalars(actor_grants_query(guild_id, actor)))


def actor_grants_query(guild_id: str, actor: Actor) -> Any:
    """The grants of a user and their roles in one guild (shared with the policy view)."""
    conditions = [
        (CapabilityGrant.subject_type == "user") & (CapabilityGrant.subject_id == actor.id)
    ]
    if actor.roles:
        conditions.append(
            (CapabilityGrant.subject_type == "role")
            & CapabilityGrant.subject_id.in_(sorted(actor.roles))
        )
    return select(CapabilityGrant.capability).where(
        CapabilityGrant.guild_id == guild_id, or_(*conditions)
    )
