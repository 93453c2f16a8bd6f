"""Decide allow / confirm / deny for one proposed call. Pure rules first, then plugin vetoes."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from gigi_core.hooks import HookTimeout, read_only
from gigi_core.manifest.models import ActionSpec, Safety
from gigi_core.policy.actor import Actor
from gigi_core.policy.capabilities import KERNEL_CAPABILITY_NAMES, matches
from gigi_core.policy.decision import Decision, Outcome
from gigi_core.store.plugin_state import PluginStateClash

if TYPE_CHECKING:
    from gigi_core.kernel import Kernel
    from gigi_core.policy.view import GuildView

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PolicyFacts:
    """Everything the rules look at, gathered from code and SQL — never from the model."""

    action: ActionSpec
    plugin_loaded: bool
    plugin_enabled: bool
    capability_default: Literal["everyone", "admins"] | None
    grants: frozenset[str]
    hook_capabilities: frozenset[str] = frozenset()
    external_consent: bool = False
    channel_visible: bool | None = None
    # the actor may view the channels named, but not everyone the answer is shown to may
    channel_audience: bool | None = None
    hook_failure: str | None = None  # a capabilities_for hook raised or timed out
    withdrawn: str | None = None  # why its plugin withdrew the action in this process
    held_back: bool = False  # an upgrade added or widened it; this guild has not accepted


HOOK_FAILED = "the policy check failed, so the call was denied"


def holds_capability(actor: Actor, facts: PolicyFacts) -> tuple[bool, str]:
    """Whether the actor holds the action's capability, and through what."""
    return holds(
        actor,
        facts.action.capability,
        facts.capability_default,
        facts.grants,
        facts.hook_capabilities,
    )


def holds(
    actor: Actor,
    cap: str,
    default: str | None,
    grants: frozenset[str],
    hook_capabilities: frozenset[str],
) -> tuple[bool, str]:
    """The capability rule itself, for actions and for commands that are not actions."""
    if default is None:
        return False, f"capability {cap} is unknown"
    if actor.is_admin:
        return True, "guild admin"
    if default == "everyone":
        return True, "granted to everyone by default"
    if any(matches(g, cap) for g in grants):
        return True, "explicit grant"
    if not kernel_capability(cap) and any(matches(g, cap) for g in hook_capabilities):
        return True, "granted by a plugin"
    return False, f"you do not hold {cap}; a guild admin can grant it with `grants add {cap}`"


def kernel_capability(cap: str) -> bool:
    """The kernel's own rights (``llm.*`` and every capability it declares): a plugin's
    ``capabilities_for`` hook cannot grant them, only admins, defaults and guild grants."""
    return cap in KERNEL_CAPABILITY_NAMES or cap.startswith("llm.")


def base_decision(actor: Actor, facts: PolicyFacts) -> Decision:
    """The kernel's own rules, in order; default deny."""
    action = facts.action
    if facts.hook_failure is not None:
        return Decision.deny(HOOK_FAILED, "policy_error")
    if facts.withdrawn is not None:
        return Decision.deny(facts.withdrawn, "withdrawn")
    if not facts.plugin_loaded:
        return Decision.deny(f"plugin {action.plugin} is not loaded", "plugin_not_loaded")
    if not facts.plugin_enabled:
        return Decision.deny(
            f"plugin {action.plugin} is not enabled in this server", "plugin_disabled"
        )
    if facts.held_back:
        return Decision.deny(held_back_reason(action), "held_back")
    if facts.channel_visible is False:
        return Decision.deny("you cannot view that channel", "channel_hidden")
    if facts.channel_audience is False:
        return Decision.deny(
            "not everyone who will see this answer can read that channel (ask inside it)",
            "channel_outside_audience",
        )
    held, why = holds_capability(actor, facts)
    if not held:
        return Decision.deny(why, "missing_capability")
    if action.safety is Safety.external and not facts.external_consent:
        return Decision.deny(
            f"{action.name} reaches outside Discord and a guild admin has not allowed "
            f"external actions for {action.plugin}",
            "external_not_consented",
        )
    if action.needs_confirmation:
        return Decision.confirm(
            f"{action.name} is a {action.safety.value} action and needs your confirmation",
            "confirm_required",
        )
    return Decision.allow(f"allowed ({why})")


def held_back_reason(action: ActionSpec) -> str:
    """Why a held-back action is refused, and what an admin does about it."""
    return (
        f"{action.name}: the installed upgrade of {action.plugin} widened what it may do, so it "
        "stays off in this server until an admin accepts the upgrade: `/gigi plugins review` "
        f"on Discord, or `gigi plugins review {action.plugin} --guild <server id> --accept`"
    )


def is_held(held: frozenset[str], action: ActionSpec) -> bool:
    return bool(held) and (action.name in held or f"{action.plugin}:*" in held)


def combine(base: Decision, vetoes: Iterable[Any]) -> Decision:
    """Apply plugin vetoes: any deny wins, then any confirm; a veto never upgrades a deny."""
    if base.outcome is Outcome.deny:
        return base
    confirm: Decision | None = None
    for veto in vetoes:
        decision = _as_decision(veto)
        if decision is None:
            continue
        if decision.outcome is Outcome.deny:
            return decision
        if decision.outcome is Outcome.confirm and confirm is None:
            confirm = decision
    if confirm is not None and base.outcome is Outcome.allow:
        return confirm
    return base


def _as_decision(veto: Any) -> Decision | None:
    if veto is None or veto == "allow":
        return None
    if isinstance(veto, Decision):
        return None if veto.outcome is Outcome.allow else veto
    if veto == "deny":
        return Decision.deny("a plugin policy denied this call", "plugin_veto")
    if veto == "confirm":
        return Decision.confirm("a plugin policy asks for confirmation", "plugin_confirm")
    raise TypeError(
        f"check_tool_call returned {veto!r}; expected None, 'confirm', 'deny' or Decision"
    )


class PolicyEngine:
    """Gathers facts for a call and decides; any exception while deciding is a deny."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

    async def decide(
        self,
        actor: Actor,
        action: ActionSpec,
        guild_id: str,
        *,
        call: Any = None,
        channel_visible: bool | None = None,
        channel_audience: bool | None = None,
        view: GuildView | None = None,
    ) -> Decision:
        try:
            if view is not None:
                base = cached_base_decision(
                    view, self.kernel, actor, action, channel_visible, channel_audience
                )
            else:
                facts = await self.facts(actor, action, guild_id, channel_visible=channel_visible)
                facts = replace(facts, channel_audience=channel_audience)
                base = base_decision(actor, facts)
            if base.outcome is Outcome.deny or not self.kernel.hooks.implemented(
                "check_tool_call"
            ):  # nobody to ask: no read-only copy of the arguments to make
                return base
            vetoes = await self.kernel.hooks.call_all(
                "check_tool_call",
                call=read_only(call),  # a veto must not change what is executed afterwards
                actor=actor,
                action=action,
                kernel=self.kernel,
            )
            return combine(base, vetoes)
        except PluginStateClash:  # logged by the store, once
            return Decision.deny(
                f"plugin {action.plugin} is not enabled in this server (its saved settings "
                "belong to another plugin of that name)",
                "plugin_clash",
            )
        except HookTimeout as exc:
            log.error("policy evaluation for %s: %s; denying", action.name, exc)
            return Decision.deny(
                f"a plugin's policy check ({exc.plugin}) did not answer within "
                f"{exc.seconds:g}s, so the call was denied",
                "policy_timeout",
            )
        except Exception:
            log.exception("policy evaluation failed for %s; denying", action.name)
            return Decision.deny("the policy check failed, so the call was denied", "policy_error")

    async def explain(self, actor: Actor, action: ActionSpec, guild_id: str) -> Decision:
        """The kernel's own rules for this actor and action, without vetoes (may raise on a
        store error; a failing ``capabilities_for`` hook is a deny)."""
        facts = await self.facts(actor, action, guild_id, channel_visible=None)
        return base_decision(actor, facts)

    async def capability(self, actor: Actor, capability: str, guild_id: str) -> Decision:
        """Allow or deny a kernel capability outside any action (the `/llm` commands): the
        same rule as an action's (admins hold it, then defaults, then guild grants; a plugin's
        hook never grants a kernel capability); a failing ``capabilities_for`` hook or any
        error while deciding is a deny."""
        try:
            from gigi_core.policy.view import guild_view

            view = await guild_view(self.kernel, actor, guild_id)
            if view.hook_failure is not None:
                return Decision.deny(HOOK_FAILED, "policy_error")
            held, why = holds(
                actor,
                capability,
                self.kernel.registry.capability_default(capability),
                view.grants,
                view.hook_capabilities,
            )
        except Exception:
            log.exception("could not decide capability %s in guild %s", capability, guild_id)
            return Decision.deny(HOOK_FAILED, "policy_error")
        if not held:
            return Decision.deny(why, "missing_capability")
        return Decision.allow(f"allowed ({why})")

    async def facts(
        self, actor: Actor, action: ActionSpec, guild_id: str, *, channel_visible: bool | None
    ) -> PolicyFacts:
        kernel = self.kernel
        state = await kernel.plugin_state.get(guild_id, action.plugin)
        granted = await kernel.grants.for_actor(guild_id, actor)
        hook_caps, failure = await hook_capabilities(kernel, actor, guild_id)
        held = await kernel.reviews.held_in(guild_id)
        return PolicyFacts(
            action=action,
            plugin_loaded=kernel.registry.plugin_loaded(action.plugin),
            plugin_enabled=state is not None and state.enabled,
            capability_default=kernel.registry.capability_default(action.capability),
            grants=frozenset(granted),
            hook_capabilities=frozenset(hook_caps),
            external_consent=state is not None and state.allow_external,
            channel_visible=channel_visible,
            hook_failure=failure,
            withdrawn=kernel.withdrawn.get(action.name),
            held_back=is_held(held, action),
        )

    async def offerable(
        self, actor: Actor, guild_id: str, view: GuildView | None = None
    ) -> tuple[ActionSpec, ...]:
        """Actions this actor could be allowed or asked to confirm here (vetoes apply per call).

        The model is only ever shown these, so it never sees a tool it cannot use. The tuple
        is the view's cached one (the same object while the facts are cached), so the runtime
        can key its toolset on it without reading every name each turn.
        """
        try:
            if view is None:
                from gigi_core.policy.view import guild_view

                view = await guild_view(self.kernel, actor, guild_id)
            key = (view.grants, actor.is_admin)  # with the guild's facts, all it depends on
            offered = view.offers.get(key)
            if offered is None:
                offered = view.offers[key] = tuple(
                    sorted(
                        (
                            action
                            for action in self.kernel.registry.actions.values()
                            if action.plugin in view.enabled
                            and action.offer_to_model
                            and base_decision(
                                actor, facts_from(view, self.kernel, action, None)
                            ).outcome
                            is not Outcome.deny
                        ),
                        key=lambda a: a.name,
                    )
                )
            return offered
        except Exception:
            log.exception("could not compute offerable tools; offering none")
            return ()


def cached_base_decision(
    view: GuildView,
    kernel: Kernel,
    actor: Actor,
    action: ActionSpec,
    channel_visible: bool | None,
    channel_audience: bool | None = None,
) -> Decision:
    """``base_decision`` on the view's facts, kept in the view.

    The view already holds the actor's grants and hook capabilities and is replaced
    whenever the stored facts change (a change through the kernel clears it at once, the
    TTL bounds others); what is not in it — the admin flag, the channel check, whether
    the plugin is loaded, the capability's default, a withdrawal, the answer's audience —
    is in the key, so a cached decision is exactly the one ``base_decision`` would make now.
    """
    key = (
        action.name,
        actor.is_admin,
        channel_visible,
        channel_audience,
        kernel.registry.plugin_loaded(action.plugin),
        kernel.registry.capability_default(action.capability),
        kernel.withdrawn.get(action.name),
    )
    found = view.decisions.get(key)
    if found is not None and found[0] is action:  # the very spec (a reload makes new ones)
        return found[1]  # type: ignore[no-any-return]
    facts = facts_from(view, kernel, action, channel_visible, channel_audience)
    decision = base_decision(actor, facts)
    if len(view.decisions) < 4096:  # bounded: a view lives for seconds
        view.decisions[key] = (action, decision)
    return decision


def facts_from(
    view: GuildView,
    kernel: Kernel,
    action: ActionSpec,
    channel_visible: bool | None,
    channel_audience: bool | None = None,
) -> PolicyFacts:
    return PolicyFacts(
        action=action,
        plugin_loaded=kernel.registry.plugin_loaded(action.plugin),
        plugin_enabled=action.plugin in view.enabled,
        capability_default=kernel.registry.capability_default(action.capability),
        grants=view.grants,
        hook_capabilities=view.hook_capabilities,
        external_consent=action.plugin in view.external,
        channel_visible=channel_visible,
        channel_audience=channel_audience,
        hook_failure=view.hook_failure,
        withdrawn=kernel.withdrawn.get(action.name),
        held_back=is_held(view.held, action),
    )


async def hook_capabilities(
    kernel: Kernel, actor: Actor, guild_id: str
) -> tuple[frozenset[str], str | None]:
    """The union of ``capabilities_for`` results, or (nothing, why) when a hook failed.

    A hook that raises or runs past its deadline makes every decision on these facts a
    deny (with a reason the caller shows), instead of failing the request itself.
    """
    caps: set[str] = set()
    try:
        for result in await kernel.hooks.call_all(
            "capabilities_for", actor=actor, guild_id=guild_id, kernel=kernel
        ):
            if result:
                caps.update(str(c) for c in result)
    except Exception as exc:
        log.error(
            "capabilities_for failed in guild %s (%s); denying every call on these facts",
            guild_id,
            exc if isinstance(exc, HookTimeout) else type(exc).__name__,
            exc_info=not isinstance(exc, HookTimeout),
        )
        return frozenset(), type(exc).__name__
    return frozenset(caps), None
