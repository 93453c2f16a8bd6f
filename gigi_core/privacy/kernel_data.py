"""What the kernel itself holds about one member, and how it is exported, deleted or purged.

Exports hold metadata only: a credential is shown by provider, label and fingerprint, a run
by its ids, counts and times — never sealed content or keys. Usage and audit rows are kept
for billing and accountability, with the member's id replaced by a keyed pseudonym.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, func, or_, select, update

from gigi_core.privacy import llm_data
from gigi_core.store.agent_tables import (
    AgentRun,
    AgentRunConfirmation,
    AgentRunContext,
    AgentRunStep,
)
from gigi_core.store.channel_tables import ChannelObservation, SecureRange
from gigi_core.store.db import Database
from gigi_core.store.llm_policy_tables import LlmPlacePolicy, LlmRolePolicy
from gigi_core.store.llm_tables import (
    LlmCredential,
    LlmGuildPolicy,
    LlmModelProfile,
    LlmUsageEvent,
)
from gigi_core.store.outbox_tables import OutboxButton
from gigi_core.store.personal_tables import LlmBillingChoice, LlmContextDisclosure
from gigi_core.store.review_tables import PluginReviewAccept
from gigi_core.store.tables import AuditEvent, CapabilityGrant, GuildPlugin, SealedSecret
from gigi_core.store.usage_actor_fold import (
    hold_watermark,
    move_run_usage,
    purge_guild_actors,
    rename_actor,
)


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def _runs_of(user_id: str, guild_id: str | None, keep_run: str | None = None) -> Any:
    query = select(AgentRun.id).where(AgentRun.actor_id == user_id)
    if keep_run is not None:  # the run carrying out the deletion finishes and stays
        query = query.where(AgentRun.id != keep_run)
    return query.where(AgentRun.guild_id == guild_id) if guild_id is not None else query


def _attributions(
    user_id: str, guild_id: str | None, keep_run: str | None = None
) -> list[tuple[Any, Any]]:
    """Columns that say who changed a setting, each with the condition of one member's rows.

    They name the member without being "their" data; like audit rows, they are kept with
    the member's id replaced by the pseudonym.
    """
    in_guild: list[tuple[Any, Any]] = [
        (ChannelObservation, ChannelObservation.updated_by),
        (SecureRange, SecureRange.started_by),
        (GuildPlugin, GuildPlugin.updated_by),
        (CapabilityGrant, CapabilityGrant.granted_by),
        (LlmGuildPolicy, LlmGuildPolicy.updated_by),
        (PluginReviewAccept, PluginReviewAccept.accepted_by),
    ]
    out = [
        (
            column,
            column == user_id
            if guild_id is None
            else (column == user_id) & (table.guild_id == guild_id),
        )
        for table, column in in_guild
    ]
    decided = AgentRunConfirmation.decided_by == user_id
    if keep_run is not None:
        decided &= AgentRunConfirmation.run_id != keep_run
    if guild_id is not None:
        decided &= AgentRunConfirmation.run_id.in_(
            select(AgentRun.id).where(AgentRun.guild_id == guild_id)
        )
    out.append((AgentRunConfirmation.decided_by, decided))
    for column, owner_type, owner_id in (
        (LlmCredential.created_by, LlmCredential.owner_type, LlmCredential.owner_id),
        (LlmCredential.updated_by, LlmCredential.owner_type, LlmCredential.owner_id),
        (LlmModelProfile.selected_by, LlmModelProfile.owner_type, LlmModelProfile.owner_id),
    ):
        where = column == user_id
        if guild_id is not None:
            where &= (owner_type == "guild") & (owner_id == guild_id)
        out.append((column, where))
    return out + llm_data.attributions(user_id, guild_id)


async def export_kernel(db: Database, user_id: str, guild_id: str | None) -> dict[str, Any]:
    async with db.session() as s:
        creds = (
            await s.scalars(
                select(LlmCredential).where(
                    LlmCredential.owner_type == "user", LlmCredential.owner_id == user_id
                )
            )
        ).all()
        grants_q = select(CapabilityGrant).where(
            CapabilityGrant.subject_type == "user", CapabilityGrant.subject_id == user_id
        )
        if guild_id is not None:
            grants_q = grants_q.where(CapabilityGrant.guild_id == guild_id)
        grants = (await s.scalars(grants_q)).all()
        runs = (
            await s.scalars(select(AgentRun).where(AgentRun.id.in_(_runs_of(user_id, guild_id))))
        ).all()
        confirmations = (
            await s.scalars(
                select(AgentRunConfirmation).where(
                    AgentRunConfirmation.run_id.in_(_runs_of(user_id, guild_id))
                )
            )
        ).all()
        usage_q = select(LlmUsageEvent).where(LlmUsageEvent.actor_id == user_id)
        if guild_id is not None:
            usage_q = usage_q.where(LlmUsageEvent.guild_id == guild_id)
        usage = (await s.scalars(usage_q)).all()
        choices = (await s.scalars(_personal(LlmBillingChoice, user_id, guild_id))).all()
        disclosed = (await s.scalars(_personal(LlmContextDisclosure, user_id, guild_id))).all()
        more = await llm_data.export_llm(s, user_id, guild_id)
    return more | {
        "llm_credentials": [
            {
                "provider": c.provider,
                "label": c.label,
                "fingerprint": c.fingerprint,
                "status": c.status,
                "created_at": _iso(c.created_at),
            }
            for c in creds
        ],
        "grants": [
            {"guild_id": g.guild_id, "capability": g.capability, "created_at": _iso(g.created_at)}
            for g in grants
        ],
        "agent_runs": [
            {
                "id": r.id,
                "guild_id": r.guild_id,
                "channel_id": r.channel_id,
                "kind": r.kind,
                "status": r.status,
                "steps": r.steps_used,
                "tool_calls": r.tool_calls_used,
                "tokens": r.tokens_used,
                "created_at": _iso(r.created_at),
            }
            for r in runs
        ],
        "confirmations": [
            {"id": c.id, "run_id": c.run_id, "action": c.action, "state": c.state}
            for c in confirmations
        ],
        "llm_usage": [
            {
                "guild_id": u.guild_id,
                "provider": u.provider,
                "model": u.model,
                "purpose": u.purpose,
                "input_tokens": u.input_tokens,
                "output_tokens": u.output_tokens,
                "status": u.status,
                "created_at": _iso(getattr(u, "created_at", None)),
            }
            for u in usage
        ],
        "llm_billing_choices": [
            {"guild_id": c.guild_id, "billing": c.billing, "updated_at": _iso(c.updated_at)}
            for c in choices
        ],
        "llm_context_disclosures": [
            {"guild_id": d.guild_id, "acknowledged_at": _iso(d.acknowledged_at)} for d in disclosed
        ],
    }


def _personal(table: Any, user_id: str, guild_id: str | None) -> Any:
    """A member's billing choices or disclosure acknowledgements (one guild's, or all)."""
    query = select(table).where(table.user_id == user_id)
    return query.where(table.guild_id == guild_id) if guild_id is not None else query


def _delete_personal(table: Any, user_id: str, guild_id: str | None) -> Any:
    query = delete(table).where(table.user_id == user_id)
    return query.where(table.guild_id == guild_id) if guild_id is not None else query


async def delete_kernel(
    db: Database,
    user_id: str,
    guild_id: str | None,
    pseudonym: str,
    *,
    keep_run: str | None = None,
) -> dict[str, int]:
    """One transaction: credentials, profiles, grants, runs go; usage and audit keep a pseudonym.

    ``keep_run`` is the run executing the deletion (``/gigi privacy delete``): it still has
    to record its own step and result, so it and its confirmation are kept.
    """
    counts: dict[str, int] = {}
    await db.writer.drain()  # queued audit and usage rows land first, then are rewritten
    async with db.session() as s:
        # Failover lists and model listings go with the keys (only when the keys do).
        counts |= await llm_data.delete_llm(s, user_id, guild_id, keys_too=guild_id is None)
        mine = (LlmCredential.owner_type == "user") & (LlmCredential.owner_id == user_id)
        if guild_id is not None:
            # A personal key serves the member in every server: one server's deletion keeps
            # it (and says so); the everywhere deletion (`gigi privacy delete`) removes it.
            kept = await s.scalar(select(func.count()).select_from(LlmCredential).where(mine))
            counts["personal_llm_keys_kept"] = int(kept or 0)
        else:
            cred_ids = select(LlmCredential.id).where(mine)
            counts["llm_profiles"] = (
                await s.execute(
                    delete(LlmModelProfile).where(
                        or_(
                            (LlmModelProfile.owner_type == "user")
                            & (LlmModelProfile.owner_id == user_id),
                            LlmModelProfile.credential_id.in_(cred_ids),
                        )
                    )
                )
            ).rowcount
            counts["llm_credentials"] = (
                await s.execute(delete(LlmCredential).where(mine))
            ).rowcount
        for table, key in (
            (LlmBillingChoice, "llm_billing_choices"),
            (LlmContextDisclosure, "llm_context_disclosures"),
        ):
            counts[key] = (await s.execute(_delete_personal(table, user_id, guild_id))).rowcount
        grants = delete(CapabilityGrant).where(
            CapabilityGrant.subject_type == "user", CapabilityGrant.subject_id == user_id
        )
        if guild_id is not None:
            grants = grants.where(CapabilityGrant.guild_id == guild_id)
        counts["grants"] = (await s.execute(grants)).rowcount
        runs = _runs_of(user_id, guild_id, keep_run)
        counts["confirmations"] = (
            await s.execute(
                delete(AgentRunConfirmation).where(AgentRunConfirmation.run_id.in_(runs))
            )
        ).rowcount
        await s.execute(delete(AgentRunStep).where(AgentRunStep.run_id.in_(runs)))
        await s.execute(delete(AgentRunContext).where(AgentRunContext.run_id.in_(runs)))
        counts["agent_runs"] = (
            await s.execute(delete(AgentRun).where(AgentRun.id.in_(runs)))
        ).rowcount
        usage = update(LlmUsageEvent).where(LlmUsageEvent.actor_id == user_id)
        billing = update(LlmUsageEvent).where(
            LlmUsageEvent.billing_owner_type == "user", LlmUsageEvent.billing_owner_id == user_id
        )
        audit = update(AuditEvent).where(AuditEvent.actor_id == user_id)
        if keep_run is not None:  # the deletion's own record: who asked, and that it ran
            audit = audit.where(or_(AuditEvent.run_id.is_(None), AuditEvent.run_id != keep_run))
        if guild_id is not None:
            usage = usage.where(LlmUsageEvent.guild_id == guild_id)
            billing = billing.where(LlmUsageEvent.guild_id == guild_id)
            audit = audit.where(AuditEvent.guild_id == guild_id)
        await hold_watermark(s)  # a running fold of usage per member finishes first
        counts["llm_usage_pseudonymised"] = (
            await s.execute(usage.values(actor_id=pseudonym))
        ).rowcount
        await rename_actor(s, user_id, guild_id, pseudonym)  # and its rollup follows
        await s.execute(billing.values(billing_owner_id=pseudonym))
        counts["audit_pseudonymised"] = (await s.execute(audit.values(actor_id=pseudonym))).rowcount
        attributed = 0
        for column, where in _attributions(user_id, guild_id, keep_run):
            result = await s.execute(
                update(column.class_).where(where).values({column.key: pseudonym})
            )
            attributed += result.rowcount
        counts["attributions_pseudonymised"] = attributed
    return {k: v for k, v in counts.items() if v}


class RunStillActive(Exception):
    """The deletion's own run has not finished yet; its job retries after a backoff."""


async def forget_run(db: Database, run_id: str, pseudonym: Any) -> int:
    """The run that carried out a deletion, once finished: its member id becomes the pseudonym.

    ``delete_kernel`` keeps that run so it can record its own steps; this removes the last
    raw id it left (run row, its confirmation, its audit and usage rows). Idempotent.
    """
    async with db.session() as s:
        run = await s.get(AgentRun, run_id)
        if run is None or run.actor_id.startswith("anon:"):
            return 0
        if run.status in ("running", "awaiting_confirmation"):
            raise RunStillActive(run_id)
        user_id, alias = run.actor_id, pseudonym(run.actor_id)
        await hold_watermark(s)
        await move_run_usage(s, run.request_id, user_id, alias)  # the rollup's folded part
        changed = 0
        for stmt in (
            update(AgentRun)  # a finished run's sealed state is gone already; make sure
            .where(AgentRun.id == run_id)
            .values(actor_id=alias, state_sealed=None, state_nonce=None, state_key_id=None),
            update(AgentRunConfirmation)
            .where(AgentRunConfirmation.run_id == run_id)
            .values(requester_id=alias),
            update(AgentRunConfirmation)
            .where(
                AgentRunConfirmation.run_id == run_id, AgentRunConfirmation.decided_by == user_id
            )
            .values(decided_by=alias),
            update(AuditEvent)
            .where(AuditEvent.run_id == run_id, AuditEvent.actor_id == user_id)
            .values(actor_id=alias),
            update(AgentRunContext).where(AgentRunContext.run_id == run_id).values(actor_id=alias),
            update(LlmUsageEvent)
            .where(LlmUsageEvent.request_id == run.request_id, LlmUsageEvent.actor_id == user_id)
            .values(actor_id=alias),
        ):
            changed += (await s.execute(stmt)).rowcount
    return changed


async def purge_kernel_guild(db: Database, guild_id: str) -> dict[str, int]:
    """Everything the kernel holds for a guild it left; usage rows stay for billing."""
    counts: dict[str, int] = {}
    await db.writer.drain()  # queued rows of the guild land first, then are purged
    async with db.session() as s:
        runs = select(AgentRun.id).where(AgentRun.guild_id == guild_id)
        await s.execute(delete(AgentRunConfirmation).where(AgentRunConfirmation.run_id.in_(runs)))
        await s.execute(delete(AgentRunStep).where(AgentRunStep.run_id.in_(runs)))
        await s.execute(delete(AgentRunContext).where(AgentRunContext.guild_id == guild_id))
        counts["agent_runs"] = (
            await s.execute(delete(AgentRun).where(AgentRun.guild_id == guild_id))
        ).rowcount
        counts |= await llm_data.purge_llm_guild(s, guild_id)
        cred_ids = select(LlmCredential.id).where(
            LlmCredential.owner_type == "guild", LlmCredential.owner_id == guild_id
        )
        await s.execute(
            delete(LlmModelProfile).where(
                or_(
                    (LlmModelProfile.owner_type == "guild")
                    & (LlmModelProfile.owner_id == guild_id),
                    LlmModelProfile.credential_id.in_(cred_ids),
                )
            )
        )
        counts["llm_credentials"] = (
            await s.execute(
                delete(LlmCredential).where(
                    LlmCredential.owner_type == "guild", LlmCredential.owner_id == guild_id
                )
            )
        ).rowcount
        await s.execute(delete(LlmGuildPolicy).where(LlmGuildPolicy.guild_id == guild_id))
        await s.execute(delete(LlmPlacePolicy).where(LlmPlacePolicy.guild_id == guild_id))
        await s.execute(delete(LlmRolePolicy).where(LlmRolePolicy.guild_id == guild_id))
        await s.execute(delete(LlmBillingChoice).where(LlmBillingChoice.guild_id == guild_id))
        await s.execute(
            delete(LlmContextDisclosure).where(LlmContextDisclosure.guild_id == guild_id)
        )
        counts["grants"] = (
            await s.execute(delete(CapabilityGrant).where(CapabilityGrant.guild_id == guild_id))
        ).rowcount
        counts["plugin_settings"] = (
            await s.execute(delete(GuildPlugin).where(GuildPlugin.guild_id == guild_id))
        ).rowcount
        # Back in the guild later, its admins review held actions again, as plugins start off.
        await s.execute(delete(PluginReviewAccept).where(PluginReviewAccept.guild_id == guild_id))
        await s.execute(
            delete(SealedSecret).where(
                SealedSecret.scope == "plugin_config",
                SealedSecret.owner.startswith(f"{guild_id}/", autoescape=True),
            )
        )
        await s.execute(delete(ChannelObservation).where(ChannelObservation.guild_id == guild_id))
        await s.execute(delete(SecureRange).where(SecureRange.guild_id == guild_id))
        await s.execute(delete(OutboxButton).where(OutboxButton.guild_id == guild_id))
        await hold_watermark(s)
        await s.execute(  # billing rows stay, without who made each call
            update(LlmUsageEvent).where(LlmUsageEvent.guild_id == guild_id).values(actor_id=None)
        )
        await purge_guild_actors(s, guild_id)  # so do the guild's days per member
        counts["audit_events"] = (
            await s.execute(delete(AuditEvent).where(AuditEvent.guild_id == guild_id))
        ).rowcount
    return {k: v for k, v in counts.items() if v}
