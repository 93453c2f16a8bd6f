"""A call that fails in a listed way moves on to the owner's next failover entry.

Wraps ``Caller.with_fallback``: the profile's own call (and its fallback model on the same
key, unless the member's role policy refuses that model) comes first; only then, when the
error class is in the owner's list for the purpose, each entry is tried in order. Each attempt is one provider call with its own usage row
(``failover_step``, ``failover_reason``) and its own budget hold, reserved and settled by
``Caller.attempt`` as for any call, so a failed attempt costs nothing and a cancelled one
leaves nothing held. The list is read only after a failure: the happy path pays nothing.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from gigi_core.llm.errors import ProviderError
from gigi_core.llm.records import CredentialUnusable

if TYPE_CHECKING:
    from collections.abc import Callable

    from gigi_core.llm.caller import Call
    from gigi_core.llm.failover_store import FailoverEntry, FailoverPlan
    from gigi_core.llm.records import Resolution
    from gigi_core.llm.service import LlmService

log = logging.getLogger(__name__)


async def plan_for(llm: LlmService, resolution: Resolution) -> FailoverPlan | None:
    """The owner's list for the resolved purpose (cached with the other LLM facts)."""
    owner, purpose = resolution.owner, resolution.purpose
    key = ("failover", owner.type, owner.id, purpose)
    return await llm.cache.fetch(key, lambda: llm.failovers.get(owner, purpose))  # type: ignore[no-any-return]


async def call(
    llm: LlmService,
    resolution: Resolution,
    make: Callable[[str], Call],
    where: dict[str, Any],
    durability: str,
) -> Any:
    """The profile's call, then the failover entries the error allows, in order."""
    fallback = resolution.fallback_model
    if fallback and where.get("roles") and not where.get("admin"):
        if await _widens(llm, resolution, replace(resolution, model=fallback), where):
            resolution = replace(resolution, fallback_model=None)  # not for these roles
    try:
        return await llm.caller.with_fallback(resolution, make, where, durability)
    except ProviderError as first:
        if resolution.keyless:  # no owner's key to move away from
            raise
        plan = await plan_for(llm, resolution)
        if plan is None or first.error_class not in plan.on:
            raise
        return await _move_on(llm, plan, resolution, make, where, durability, first)


async def _move_on(
    llm: LlmService,
    plan: FailoverPlan,
    resolution: Resolution,
    make: Callable[[str], Call],
    where: dict[str, Any],
    durability: str,
    first: ProviderError,
) -> Any:
    failed, tried = first, [resolution.credential_label]
    for step, entry in enumerate(plan.entries, 1):
        model = entry.model or resolution.model
        if entry.credential_id == resolution.credential_id and model == resolution.model:
            continue  # the call that just failed
        target = await _resolution(llm, resolution, entry, model)
        if target is None:
            continue
        if await _widens(llm, resolution, target, where):
            log.info("llm failover: entry %d skipped (the member's roles do not allow it)", step)
            continue
        log.info(
            "llm failover: %s -> %s (step %d, %s)",
            tried[-1],
            entry.label,
            step,
            failed.error_class,
        )
        moved = {**where, "failover_step": step, "failover_reason": failed.error_class}
        try:
            return await llm.caller.with_fallback(target, make, moved, durability)
        except CredentialUnusable:
            log.info("llm failover: entry %d skipped (its credential cannot be used)", step)
            continue
        except ProviderError as err:
            tried.append(entry.label)
            failed = err
            if err.error_class not in plan.on:
                break
    failed.hint = (
        f"tried {', then '.join(tried)} for {plan.purpose} (failover list of {plan.owner}); "
        f"the last failed with {failed.error_class}"
        + (f". {failed.hint}" if failed.hint and failed is first else "")
    )
    raise failed


async def _widens(
    llm: LlmService, resolution: Resolution, target: Resolution, where: dict[str, Any]
) -> bool:
    """Whether ``target`` is a model the member's role policy refuses where the failed
    call's was allowed: a failover list never widens what a role may use."""
    guild = where.get("guild_id")
    if not guild or resolution.owner.type == "user":
        return False
    policies = await llm.resolver.place_policies(guild)
    roles, admin = where.get("roles") or (), bool(where.get("admin"))
    return (
        policies.role_refusal(target, roles, admin) is not None
        and policies.role_refusal(resolution, roles, admin) is None
    )


async def _resolution(
    llm: LlmService, resolution: Resolution, entry: FailoverEntry, model: str
) -> Resolution | None:
    """The entry as a resolution of the same owner (None: revoked since the list was read)."""
    meta = await llm.resolver.credential(entry.credential_id)
    if meta is None or meta.info.revoked_at is not None:
        return None
    if (meta.info.owner.type, meta.info.owner.id) != (resolution.owner.type, resolution.owner.id):
        return None  # never another owner's key (the store already refuses it)
    return replace(
        resolution,
        provider=meta.info.provider,
        model=model,
        fallback_model=None,
        credential_id=meta.info.id,
        credential_label=meta.info.label,
        base_url=meta.info.base_url,
    )
