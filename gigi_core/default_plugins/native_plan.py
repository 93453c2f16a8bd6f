"""The ``plugins.plan`` native tool: which enabled actions could serve a goal, and what
capability each needs, decided for the asker. It runs nothing."""

from __future__ import annotations

import logging
from typing import Any

from gigi_core.retrieval import match_actions

log = logging.getLogger(__name__)


async def plugins_plan(ctx: Any, goal: str, limit: int = 8) -> dict[str, Any]:
    """Matching actions of plugins enabled here, with the kernel's decision for this actor."""
    kernel = ctx.kernel
    enabled = set(await kernel.plugin_state.enabled_plugins(ctx.guild_id))
    actions = [a for a in kernel.registry.actions.values() if a.plugin in enabled]
    matches = []
    for action, score in match_actions(goal, actions, limit=limit):
        try:
            decision = await kernel.policy.explain(ctx.actor, action, ctx.guild_id)
            outcome, reason = decision.outcome.value, decision.reason
        except Exception:  # fail closed, like the policy engine itself
            log.exception("plugins.plan: the policy check failed for %s", action.name)
            outcome, reason = "deny", "the policy check failed, so the answer is no"
        matches.append(
            {
                "action": action.name,
                "plugin": action.plugin,
                "description": action.description,
                "safety": action.safety.value,
                "capability": action.capability,
                "command": action.command,
                "decision": outcome,
                "allowed": outcome != "deny",
                "reason": reason,
                "score": score,
            }
        )
    return {"guild_id": ctx.guild_id, "matches": matches, "ran": False}
