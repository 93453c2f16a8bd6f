"""The kernel's native tools: ``plugins.enabled``, ``permissions.check``, ``llm.usage.guild``,
and the ``/gigi channel`` and ``/gigi privacy`` commands (``native_commands``).

They are ordinary manifest-declared actions (read-only, capability-checked, audited) so the
model can answer "what can you do here?", "may I use X?" and "what did we spend?" from
deterministic facts instead of guessing. Each plugin namespace has its own small manifest in
``manifests/native/``; the kernel's default plugins count as enabled in every guild until an
admin disables them (see ``PluginStateStore.on_by_default``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gigi_core import hookimpl

MANIFESTS = ("plugins.yaml", "permissions.yaml", "llm.yaml", "gigi.yaml")


def manifest_dir() -> Path:
    """The repository's ``manifests/native`` or the wheel's bundled ``gigi_core/_manifests``."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package.parent / "manifests" / "native", package / "_manifests" / "native"):
        if (candidate / MANIFESTS[0]).exists():
            return candidate
    return package.parent / "manifests" / "native"


@hookimpl(trylast=True)
def register_manifests(register: Any) -> None:
    folder = manifest_dir()
    for name in MANIFESTS:
        register(folder / name)


@hookimpl(trylast=True)
def register_tools(register: Any) -> None:
    register("plugins.enabled", plugins_enabled)
    register("permissions.check", permissions_check)
    register("llm.usage.guild", llm_usage_guild)
    from gigi_core.default_plugins.native_plan import plugins_plan

    register("plugins.plan", plugins_plan)
    from gigi_core.default_plugins import native_commands as c

    register("gigi.channel.pause", c.channel_pause)
    register("gigi.channel.resume", c.channel_resume)
    register("gigi.channel.secure", c.channel_secure)
    register("gigi.channel.status", c.channel_status)
    register("gigi.privacy.info", c.privacy_info)
    register("gigi.privacy.export", c.privacy_export)
    register("gigi.privacy.delete", c.privacy_delete)


@hookimpl(trylast=True)
def register_jobs(register: Any) -> None:
    from gigi_core.default_plugins.native_commands import forget_run, guild_purge

    register("gigi.guild_purge", guild_purge, retries=5, timeout=3600.0)
    # Retries back off from GIGI_JOBS_RETRY_BASE_SECONDS while the deleting run is still open.
    register("gigi.privacy_forget_run", forget_run, retries=10, timeout=60.0)
    # The per-member usage rollup catches up with the usage events every five minutes.
    register("gigi.usage_members_fold", usage_members_fold, schedule="*/5 * * * *", timeout=600.0)


async def usage_members_fold(ctx: Any) -> None:
    """Folds the usage events written since the last run into the per-member daily rollup."""
    from gigi_core import fold_usage_by_actor

    await fold_usage_by_actor(ctx.kernel.db)


async def plugins_enabled(ctx: Any) -> dict[str, Any]:
    """Enabled plugins of ``ctx.guild_id`` with their public manifest facts (no config)."""
    kernel = ctx.kernel
    registry = kernel.registry
    plugins = []
    for name in await kernel.plugin_state.enabled_plugins(ctx.guild_id):
        manifest = registry.manifests.get(name)
        if manifest is None:  # enabled once, but its package is not installed any more
            continue
        owner = registry.owner_of(name)
        plugins.append(
            {
                "name": name,
                "version": manifest.plugin.version,
                "description": manifest.plugin.description,
                "native": owner is not None and owner.source == "default",
                "actions": [
                    {"name": a.name, "description": a.description, "safety": a.safety.value}
                    for a in manifest.actions
                ],
            }
        )
    return {"guild_id": ctx.guild_id, "plugins": plugins}


async def permissions_check(ctx: Any, action: str) -> dict[str, Any]:
    """The kernel's rules for *this* actor (from ``ctx``, never from arguments) and ``action``.

    Only the decision and a reason addressed to the asker are returned: never the grant
    table, other people's grants or anything about other users.
    """
    kernel = ctx.kernel
    spec = kernel.registry.actions.get(action)
    if spec is None:
        return {
            "action": action,
            "known": False,
            "decision": "deny",
            "allowed": False,
            "reason": f"no installed plugin declares an action named {action!r}",
        }
    try:
        decision = await kernel.policy.explain(ctx.actor, spec, ctx.guild_id)
    except Exception:  # fail closed, like the policy engine itself
        import logging

        logging.getLogger(__name__).exception("permissions.check failed for %s", action)
        return {
            "action": action,
            "known": True,
            "decision": "deny",
            "allowed": False,
            "reason": "the policy check failed, so the answer is no",
        }
    result: dict[str, Any] = {
        "action": action,
        "known": True,
        "decision": decision.outcome.value,
        "allowed": decision.outcome.value != "deny",
        "reason": decision.reason,
    }
    if decision.outcome.value != "deny":
        result["note"] = (
            "a plugin's own policy may still refuse, or ask to confirm, a particular call"
        )
    return result


async def llm_usage_guild(ctx: Any, since: str | None = None) -> dict[str, Any]:
    """Usage aggregates of ``ctx.guild_id`` (counts and tokens only; no content exists) and
    each budget's spend against its limit in the current window."""
    from gigi_core import GigiError, ToolExecutionError
    from gigi_core.llm import parse_since

    try:
        when = parse_since(since)
    except GigiError as exc:
        raise ToolExecutionError(
            f"cannot read since={since!r}: use e.g. 7d, 24h or 2026-01-31"
        ) from exc
    rows = [r.as_dict() for r in await ctx.kernel.llm.usage(ctx.guild_id, when)]
    totals = {
        key: sum(r[key] for r in rows)
        for key in ("calls", "input_tokens", "output_tokens", "reasoning_tokens", "cached_tokens")
    }
    budgets = [b.summary() for b in await ctx.kernel.llm.budget_status(ctx.guild_id)]
    return {
        "guild_id": ctx.guild_id,
        "since": when.isoformat() if when else None,
        "rows": rows,
        "totals": totals,
        "budgets": budgets,  # the current window of each budget: spent, held, limit
    }
