"""``kernel.llm.places``: set and show per-place and per-role LLM policies, and hold a
member to their roles' allowed models before a call.

Kept out of ``service.py`` so the service stays the list of what it offers; every change
here clears the resolution cache (``LlmService._changed``) and is audited (ids only).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gigi_core.errors import Hint
from gigi_core.llm.channel_policy import Effective, Place, PlacePolicy, RolePolicy
from gigi_core.llm.channel_policy_store import ChannelPolicyStore
from gigi_core.llm.records import LlmConfigError, Owner, Resolution

if TYPE_CHECKING:
    from gigi_core.llm.budget_store import BudgetStatus
    from gigi_core.llm.service import LlmService

AMBIENT = "ambient"  # the plugin that answers every message of its channels


@dataclass(frozen=True)
class PolicyView:
    """What ``policy show`` prints: effective values with their source, roles, budgets."""

    guild_id: str
    places: tuple[Place, ...]
    effective: Effective
    roles: tuple[RolePolicy, ...]
    role_budgets: tuple[BudgetStatus, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "guild_id": self.guild_id,
            "places": [{"kind": p.kind, "id": p.id} for p in self.places],
            **self.effective.as_dict(),
            "roles": [r.as_dict() for r in self.roles],
            "role_budgets": [
                {
                    "role_id": s.budget.scope_id,
                    "window": s.budget.window,
                    "limit": s.budget.limit,
                    "spent": s.spent,
                }
                for s in self.role_budgets
            ],
        }


class PlacePolicies:
    """The per-place and per-role policy commands' kernel side."""

    def __init__(self, service: LlmService) -> None:
        self.service = service
        self.store = ChannelPolicyStore(service.kernel.db)

    async def effective(self, guild_id: str, places: Sequence[Place] = ()) -> Effective:
        """The values that apply at ``places`` (nearest first), from the cached fact."""
        return (await self.service.resolver.place_policies(guild_id)).effective(places)

    async def set_place(
        self,
        guild_id: str,
        place: Place,
        *,
        purpose: str | None = None,
        profile: str | None = None,
        model: str | None = None,
        prompt: str | None = None,
        answer: str | None = None,
        clear: str | None = None,
        by: str | None = None,
    ) -> PlacePolicy:
        """Change a place's model override, prompt or answer mode (``ChannelPolicyStore``)."""
        if answer == "every":
            enabled = await self.service.kernel.plugin_state.enabled_plugins(guild_id)
            if AMBIENT not in enabled:
                raise LlmConfigError(
                    "answer mode every only applies to ambient channels, and the ambient "
                    f"plugin is not enabled in guild {guild_id}",
                    hint=Hint(
                        "enable the ambient plugin (`/gigi plugins enable plugin:ambient`) "
                        "and turn it on in the channel (`/ambient enable`), or use answer "
                        "mode mention or replies",
                        console="enable the ambient plugin (`/enable ambient`) and turn it on "
                        "in the channel (`/ambient enable channel=ID persona=...`), or use "
                        "answer mode mention or replies",
                        shell=f"enable the ambient plugin (`gigi plugins enable ambient --guild "
                        f"{guild_id}`) and turn it on in the channel (`/ambient enable` on "
                        "Discord or the console), or use answer mode mention or replies",
                    ),
                )
        policy = await self.store.set_place(
            guild_id,
            place,
            purpose=purpose,
            profile=profile,
            model=model,
            prompt=prompt,
            answer=answer,
            clear=clear,
            by=by,
        )
        self.service._changed()
        await self.service._audit("llm.policy.place", Owner.guild(guild_id), by, str(place))
        return policy

    async def set_role(
        self, guild_id: str, role_id: str, models: Iterable[str] | None, *, by: str | None = None
    ) -> RolePolicy | None:
        """Replace a role's allowed models; ``None`` lifts the role's limit."""
        policy = await self.store.set_role(guild_id, role_id, models, by=by)
        self.service._changed()
        await self.service._audit("llm.policy.role", Owner.guild(guild_id), by, f"role {role_id}")
        return policy

    async def place_deleted(self, guild_id: str, place_id: str) -> int:
        """The surface says a place is gone: its policy goes with it, so a later place that
        reuses nothing of it inherits cleanly and no row outlives what it described."""
        removed = await self.store.remove_place(guild_id, place_id)
        if removed:
            self.service._changed()
            await self.service._audit(
                "llm.policy.place_deleted", Owner.guild(guild_id), None, f"place {place_id}"
            )
        return removed

    async def show(self, guild_id: str, places: Sequence[Place] = ()) -> PolicyView:
        """Everything ``policy show`` prints, read fresh (not from the cache)."""
        policies = await self.store.read(guild_id)
        budgets = [
            s for s in await self.service.budget_status(guild_id) if s.budget.scope_kind == "role"
        ]
        return PolicyView(
            guild_id,
            tuple(places),
            policies.effective(places),
            tuple(policies.roles[r] for r in sorted(policies.roles)),
            tuple(budgets),
        )

    async def check_roles(self, resolution: Resolution, where: dict[str, Any]) -> None:
        """Refuse before the call when the member's roles allow none of the resolved model.
        Only calls in a guild that the member does not pay for themselves are held."""
        guild = where.get("guild_id")
        if not guild or resolution.owner.type == "user":
            return
        policies = await self.service.resolver.place_policies(guild)
        refusal = policies.role_refusal(resolution, where.get("roles") or (), where["admin"])
        if refusal is not None:
            raise refusal
