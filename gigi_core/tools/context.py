"""What a tool handler receives besides its arguments."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gigi_core.policy.actor import Actor

if TYPE_CHECKING:
    from gigi_core.kernel import Kernel
    from gigi_core.manifest.models import ActionSpec


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


@dataclass(frozen=True)
class ToolOutcome:
    """The result of one deterministic call, with metadata for audits and callers."""

    action: str
    status: str  # "ok"
    result: Any
    decision: str
    duration_ms: float
    audit: Any = None  # the metadata-only audit row of this call
