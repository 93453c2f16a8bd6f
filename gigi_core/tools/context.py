"""What a tool handler receives besides its arguments."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gigi_core.policy.actor import Actor

if TYPE_CHECKING:
    from gigi_core.kernel import Kernel
    from gigi_core.llm.channel_policy import Place
    from gigi_core.manifest.models import ActionSpec

# The channel ids an actor may view now, as the surface knows them; None: it cannot tell.
ChannelLister = Callable[[], Awaitable[frozenset[str] | None]]


@dataclass(frozen=True)
class ToolContext:
    """The caller, the place, the plugin's validated per-guild config and the kernel."""

    actor: Actor
    guild_id: str
    channel_id: str | None
    config: Any
    kernel: Kernel
    action: ActionSpec
    run_id: str | None = None
    call_id: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)
    channel_lister: ChannelLister | None = None
    # Who pays for the run this call is part of (server|me, decided before the run) and
    # where it was asked, nearest first: a tool's own model calls pass them on, so they
    # bill and follow place policies as the run's calls do. None/(): outside a run.
    billing: str | None = None
    places: tuple[Place, ...] = ()
    _listed: dict[str, frozenset[str] | None] = field(
        default_factory=dict, repr=False, compare=False
    )

    async def visible_channels(self) -> frozenset[str] | None:
        """Every channel the actor may view now, from the surface (asked once per call).

        ``None`` means the surface cannot tell (the console, a shell): a tool that reads
        other channels' data must then keep to ``channel_id``.
        """
        if self.channel_lister is None:
            return None
        if "ids" not in self._listed:
            listed = await self.channel_lister()
            self._listed["ids"] = None if listed is None else frozenset(map(str, listed))
        return self._listed["ids"]


@dataclass(frozen=True)
class ToolOutcome:
    """The result of one deterministic call, with metadata for audits and callers."""

    action: str
    status: str  # "ok"
    result: Any
    decision: str
    duration_ms: float
    audit: Any = None  # the metadata-only audit row of this call
