"""What the LLM tables beyond keys and profiles hold about a member or a guild: failover
lists, model listings, budgets and their counters, and who changed a policy or budget.

Apart from ``kernel_data`` so each stays small. Exports are metadata only (ids, models,
counts, times): never a key, a prompt or an admin's channel instructions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, or_, select

from gigi_core.store.budget_tables import LlmBudget, LlmBudgetLease, LlmBudgetWindow
from gigi_core.store.catalogue_tables import LlmModelCatalogue
from gigi_core.store.failover_tables import LlmFailover
from gigi_core.store.llm_policy_tables import LlmPlacePolicy, LlmRolePolicy
from gigi_core.store.llm_tables import LlmCredential

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def _owned(table: Any, owner_type: str, owner_id: str) -> Any:
    return (table.owner_type == owner_type) & (table.owner_id == owner_id)


def _member_budgets(user_id: str, guild_id: str | None) -> Any:
    """Budgets naming the member: set on them alone (``member:<id>``)."""
    query = select(LlmBudget.id).where(
        LlmBudget.scope_kind == "member", LlmBudget.scope_id == user_id
    )
    return query.where(LlmBudget.guild_id == guild_id) if guild_id is not None else query


def _counted_for(user_id: str, guild_id: str | None) -> tuple[Any, Any]:
    """The member's own counter rows: their window (and lease) rows of "every member"
    budgets, whose subject is the member's id."""
    every = select(LlmBudget.id).where(LlmBudget.scope_kind == "member")
    if guild_id is not None:
        every = every.where(LlmBudget.guild_id == guild_id)
    windows = (LlmBudgetWindow.subject == user_id) & LlmBudgetWindow.budget_id.in_(every)
    leases = (LlmBudgetLease.subject == user_id) & LlmBudgetLease.budget_id.in_(every)
    return windows, leases


def attributions(user_id: str, guild_id: str | None) -> list[tuple[Any, Any]]:
    """The LLM policy, budget and failover columns naming who changed them, each with the
    condition of this member's rows (kept with the member's id replaced by the pseudonym)."""
    out: list[tuple[Any, Any]] = []
    for table in (LlmPlacePolicy, LlmRolePolicy, LlmBudget):
        where = table.updated_by == user_id
        if guild_id is not None:
            where &= table.guild_id == guild_id
        out.append((table.updated_by, where))
    # The member's own lists are theirs, not an attribution: they go with their keys.
    where = (LlmFailover.updated_by == user_id) & (LlmFailover.owner_type != "user")
    if guild_id is not None:
        where &= _owned(LlmFailover, "guild", guild_id)
    out.append((LlmFailover.updated_by, where))
    return out


async def export_llm(s: AsyncSession, user_id: str, guild_id: str | None) -> dict[str, Any]:
    """The member's failover lists, model listings of their keys, the budgets naming them
    with their counters, and the LLM settings they last changed."""
    mine = _owned(LlmCredential, "user", user_id)
    failover = await s.scalars(select(LlmFailover).where(_owned(LlmFailover, "user", user_id)))
    listings = (
        await s.execute(
            select(LlmCredential.label, LlmModelCatalogue)
            .join(LlmCredential, LlmCredential.id == LlmModelCatalogue.credential_id)
            .where(mine)
        )
    ).all()
    budgets = (
        await s.scalars(
            select(LlmBudget).where(LlmBudget.id.in_(_member_budgets(user_id, guild_id)))
        )
    ).all()
    windows_where, _ = _counted_for(user_id, guild_id)
    named = LlmBudgetWindow.budget_id.in_(_member_budgets(user_id, guild_id))
    windows = (
        await s.execute(
            select(LlmBudget.guild_id, LlmBudget.window, LlmBudget.unit, LlmBudgetWindow)
            .join(LlmBudget, LlmBudget.id == LlmBudgetWindow.budget_id)
            .where(or_(windows_where, named))
        )
    ).all()
    changed = []
    for column, where in attributions(user_id, guild_id):
        table = column.class_
        for row in (await s.scalars(select(table).where(where))).all():
            changed.append(
                {
                    "table": table.__tablename__,
                    "guild_id": _guild_of(row),
                    "what": _what(row),
                    "updated_at": _iso(row.updated_at),
                }
            )
    return {
        "llm_failover": [
            {
                "purpose": f.purpose,
                "models": [e.get("model") for e in f.entries],
                "on_errors": list(f.on_errors),
                "updated_at": _iso(f.updated_at),
            }
            for f in failover
        ],
        "llm_model_listings": [
            {
                "label": label,
                "provider": c.provider,
                "models": len(c.models),
                "fetched_at": _iso(c.fetched_at),
            }
            for label, c in listings
        ],
        "llm_budgets": [
            {
                "guild_id": b.guild_id,
                "unit": b.unit,
                "limit": b.limit,
                "window": b.window,
                "updated_at": _iso(b.updated_at),
            }
            for b in budgets
        ],
        "llm_budget_windows": [
            {
                "guild_id": guild,
                "window": window,
                "unit": unit,
                "starts": w.starts,
                "spent": w.spent,
            }
            for guild, window, unit, w in windows
        ],
        "llm_settings_changed": changed,
    }


def _guild_of(row: Any) -> str | None:
    if isinstance(row, LlmFailover):  # a server's list, or the operator's (no guild)
        return row.owner_id if row.owner_type == "guild" else None
    return row.guild_id  # type: ignore[no-any-return]


def _what(row: Any) -> str:
    """Which setting a row is, by ids only (a place, a role, a budget's scope, a purpose)."""
    if isinstance(row, LlmPlacePolicy):
        return f"{row.kind} {row.place_id}"
    if isinstance(row, LlmRolePolicy):
        return f"role {row.role_id}"
    if isinstance(row, LlmBudget):
        return f"{row.scope_kind} {row.scope_id} {row.window} budget".replace("  ", " ")
    return f"failover {row.purpose}"


async def delete_llm(
    s: AsyncSession, user_id: str, guild_id: str | None, *, keys_too: bool
) -> dict[str, int]:
    """Budgets naming the member and their counters go (in one guild, or everywhere); with
    ``keys_too`` (the everywhere deletion) also their failover lists and the model listings
    of their keys, which go with the keys. Attributions are pseudonymised by the caller."""
    counts: dict[str, int] = {}
    if keys_too:
        cred_ids = select(LlmCredential.id).where(_owned(LlmCredential, "user", user_id))
        counts["llm_model_listings"] = (
            await s.execute(
                delete(LlmModelCatalogue).where(LlmModelCatalogue.credential_id.in_(cred_ids))
            )
        ).rowcount
        counts["llm_failover"] = (
            await s.execute(delete(LlmFailover).where(_owned(LlmFailover, "user", user_id)))
        ).rowcount
    named = _member_budgets(user_id, guild_id)
    windows, leases = _counted_for(user_id, guild_id)
    await s.execute(delete(LlmBudgetLease).where(or_(leases, LlmBudgetLease.budget_id.in_(named))))
    counts["llm_budget_windows"] = (
        await s.execute(
            delete(LlmBudgetWindow).where(or_(windows, LlmBudgetWindow.budget_id.in_(named)))
        )
    ).rowcount
    ids = list((await s.scalars(named)).all())
    if ids:
        counts["llm_budgets"] = (
            await s.execute(delete(LlmBudget).where(LlmBudget.id.in_(ids)))
        ).rowcount
    return counts


async def purge_llm_guild(s: AsyncSession, guild_id: str) -> dict[str, int]:
    """A left guild's failover lists, the model listings of its keys and its budgets with
    every counter; run before its credentials are deleted."""
    cred_ids = select(LlmCredential.id).where(_owned(LlmCredential, "guild", guild_id))
    await s.execute(delete(LlmModelCatalogue).where(LlmModelCatalogue.credential_id.in_(cred_ids)))
    counts = {
        "llm_failover": (
            await s.execute(delete(LlmFailover).where(_owned(LlmFailover, "guild", guild_id)))
        ).rowcount
    }
    budgets = select(LlmBudget.id).where(LlmBudget.guild_id == guild_id)
    await s.execute(delete(LlmBudgetLease).where(LlmBudgetLease.budget_id.in_(budgets)))
    await s.execute(delete(LlmBudgetWindow).where(LlmBudgetWindow.budget_id.in_(budgets)))
    counts["llm_budgets"] = (
        await s.execute(delete(LlmBudget).where(LlmBudget.guild_id == guild_id))
    ).rowcount
    return counts
