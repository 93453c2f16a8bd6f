"""Failover lists: per owner and purpose, which of *that owner's* credentials (and models)
a call moves on to, in order, and on which error classes.

An entry is ``LABEL`` (the profile's model on another key) or ``LABEL:MODEL``; labels are
looked up among the owner's own active credentials only, so a list can never send a
call to another owner's key (and so never to another bill). Auth, permission and
bad-request failures do not move on unless the list names them: a second key rarely
fixes a request that is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, select

from gigi_core.llm.errors import ERROR_CLASSES, FAILOVER_DEFAULT_ON
from gigi_core.llm.profiles import check_model
from gigi_core.llm.records import LlmConfigError, Owner, check_purpose
from gigi_core.store.failover_tables import LlmFailover
from gigi_core.store.llm_tables import LlmCredential
from gigi_core.store.tables import utcnow

if TYPE_CHECKING:
    from gigi_core.store.db import Database

DEFAULT_ON = FAILOVER_DEFAULT_ON
#: Other names people use for an error class.
ALIASES = {"server_error": "server", "5xx": "server", "429": "rate_limited", "529": "overloaded"}
MAX_ENTRIES = 5


@dataclass(frozen=True)
class FailoverEntry:
    """One step of a list: a credential of the owner and the model to ask there (None: the
    profile's own model)."""

    credential_id: str
    label: str
    provider: str
    model: str | None
    revoked: bool = False

    def __str__(self) -> str:
        return f"{self.label}:{self.model}" if self.model else self.label


@dataclass(frozen=True)
class FailoverPlan:
    owner: Owner
    purpose: str
    entries: tuple[FailoverEntry, ...]
    on: frozenset[str]
    updated_by: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "owner": str(self.owner),
            "purpose": self.purpose,
            "order": [
                {
                    "credential": e.label,
                    "provider": e.provider,
                    "model": e.model,
                    "revoked": e.revoked,
                }
                for e in self.entries
            ],
            "on": sorted(self.on),
            "updated_by": self.updated_by,
        }

    def describe(self) -> str:
        """``chat: the profile, then A (openai, gpt-4o), ...; on rate_limited, server``."""
        return f"{self.purpose}: {self.order_text()}"

    def order_text(self) -> str:
        """The list in words, without the purpose."""
        steps = ", then ".join(
            f"{e.label} ({e.provider}, {e.model or 'the profile model'})"
            + (" [revoked: skipped]" if e.revoked else "")
            for e in self.entries
        )
        return f"the profile, then {steps}; on {', '.join(sorted(self.on))}"


def parse_order(text: str) -> list[tuple[str, str | None]]:
    """``A,B:gpt-4o-mini`` -> [("A", None), ("B", "gpt-4o-mini")]; the model may hold ``:``."""
    entries: list[tuple[str, str | None]] = []
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        label, sep, model = item.partition(":")
        if not label.strip():
            raise LlmConfigError(
                f"failover entry {item!r} names no credential",
                hint="give --order as LABEL or LABEL:MODEL, comma-separated",
            )
        entries.append((label.strip(), check_model(model, "failover model") if sep else None))
    if not entries:
        raise LlmConfigError(
            "the failover order is empty",
            hint="give --order LABEL[:MODEL],... (or use `failover clear` to remove the list)",
        )
    if len(entries) > MAX_ENTRIES:
        raise LlmConfigError(
            f"the failover order has {len(entries)} entries", hint=f"give at most {MAX_ENTRIES}"
        )
    return entries


def parse_on(text: str | None) -> frozenset[str]:
    """``rate_limited,server`` -> the error classes; None or empty: ``DEFAULT_ON``."""
    if text is None or not text.strip():
        return frozenset(DEFAULT_ON)
    found: set[str] = set()
    for raw in text.split(","):
        name = ALIASES.get(raw.strip().lower(), raw.strip().lower())
        if not name:
            continue
        if name not in ERROR_CLASSES:
            raise LlmConfigError(
                f"unknown error class {raw.strip()!r} in --on",
                hint=f"use any of {', '.join(ERROR_CLASSES)} (default: {','.join(DEFAULT_ON)})",
            )
        found.add(name)
    if not found:  # a list that names nothing would never move a call on
        raise LlmConfigError(
            f"--on {text!r} names no error class",
            hint=f"name some of {', '.join(ERROR_CLASSES)}, or leave --on out for the default",
        )
    return frozenset(found)


class FailoverStore:
    """Set, read and clear failover lists; every entry is checked against the owner."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def set(
        self,
        owner: Owner,
        purpose: str,
        order: list[tuple[str, str | None]],
        on: frozenset[str],
        *,
        by: str | None = None,
    ) -> FailoverPlan:
        purpose = check_purpose(purpose)
        labels = [label for label, _ in order]
        if len(set(order)) != len(order):
            raise LlmConfigError(
                f"the failover order repeats an entry ({','.join(labels)})",
                hint="name each credential (or credential:model) once",
            )
        async with self.db.session() as s:
            creds = {
                c.label: c
                for c in await s.scalars(
                    select(LlmCredential).where(
                        LlmCredential.owner_type == owner.type,
                        LlmCredential.owner_id == owner.id,
                        LlmCredential.revoked_at.is_(None),
                    )
                )
            }
            missing = [label for label in labels if label not in creds]
            if missing:
                known = ", ".join(sorted(creds)) or "none"
                raise LlmConfigError(
                    f"{owner} has no active credential labelled "
                    f"{', '.join(repr(m) for m in missing)} (its credentials: {known})",
                    hint=(
                        "a failover list names only the same owner's credentials (it never "
                        f"moves a bill); add one with `gigi llm credential add --owner {owner} ...`"
                    ),
                )
            row = await s.scalar(self._query(owner, purpose))
            if row is None:
                row = LlmFailover(owner_type=owner.type, owner_id=owner.id, purpose=purpose)
                s.add(row)
            row.entries = [{"credential_id": creds[lb].id, "model": m} for lb, m in order]
            row.on_errors = sorted(on)
            row.updated_by, row.updated_at = by, utcnow()
            entries = tuple(
                FailoverEntry(creds[lb].id, lb, creds[lb].provider, m) for lb, m in order
            )
        return FailoverPlan(owner, purpose, entries, on, by)

    async def get(self, owner: Owner, purpose: str) -> FailoverPlan | None:
        async with self.db.session() as s:
            row = await s.scalar(self._query(owner, purpose))
            if row is None:
                return None
            return await self._plan(s, row)

    async def find(self, owner: Owner) -> list[FailoverPlan]:
        async with self.db.session() as s:
            rows = await s.scalars(
                select(LlmFailover)
                .where(LlmFailover.owner_type == owner.type, LlmFailover.owner_id == owner.id)
                .order_by(LlmFailover.purpose)
            )
            return [await self._plan(s, row) for row in rows]

    async def clear(self, owner: Owner, purpose: str) -> bool:
        purpose = check_purpose(purpose)
        async with self.db.session() as s:
            result = await s.execute(
                delete(LlmFailover).where(
                    LlmFailover.owner_type == owner.type,
                    LlmFailover.owner_id == owner.id,
                    LlmFailover.purpose == purpose,
                )
            )
            return bool(result.rowcount)  # type: ignore[attr-defined]

    async def _plan(self, s: Any, row: LlmFailover) -> FailoverPlan:
        ids = [e.get("credential_id") for e in row.entries or []]
        creds = {
            c.id: c for c in await s.scalars(select(LlmCredential).where(LlmCredential.id.in_(ids)))
        }
        entries = []
        for item in row.entries or []:
            cred = creds.get(item.get("credential_id"))
            if cred is None or cred.owner_type != row.owner_type or cred.owner_id != row.owner_id:
                continue  # never another owner's key, whatever the row says
            entries.append(
                FailoverEntry(
                    cred.id,
                    cred.label,
                    cred.provider,
                    item.get("model"),
                    cred.revoked_at is not None,
                )
            )
        owner = Owner(row.owner_type, row.owner_id)  # type: ignore[arg-type]
        return FailoverPlan(
            owner, row.purpose, tuple(entries), frozenset(row.on_errors or ()), row.updated_by
        )

    @staticmethod
    def _query(owner: Owner, purpose: str) -> Any:
        return select(LlmFailover).where(
            LlmFailover.owner_type == owner.type,
            LlmFailover.owner_id == owner.id,
            LlmFailover.purpose == purpose,
        )
