"""A run's resumable state: what the loop needs after a pause or a restart (sealed at rest)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from gigi_core.agent.contracts import Request
from gigi_core.policy.actor import Actor


@dataclass
class RunState:
    run_id: str
    mode: str  # "agent" (model loop) | "direct" (one deterministic call)
    request: dict[str, Any]
    messages: list[dict[str, Any]] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)  # proposed calls not yet handled
    awaiting: dict[str, Any] | None = None  # the call waiting for a confirmation
    in_flight: dict[str, Any] | None = None  # the call executing right now (never rerun)
    citations: list[dict[str, Any]] = field(default_factory=list)
    tools: dict[str, str] = field(default_factory=dict)  # wire name -> action
    retries: dict[str, int] = field(default_factory=dict)
    invalid: int = 0
    step: int = 0
    tool_calls: int = 0
    llm_calls: int = 0
    tokens: int = 0
    tokens_in: int = 0
    tokens_out: int = 0

    def to_json(self) -> dict[str, Any]:
        """Shallow on purpose: it is serialised right away, and asdict's deep copy is slow."""
        return {name: getattr(self, name) for name in _FIELDS}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunState:
        return cls(**data)

    def counters(self) -> dict[str, int]:
        return {
            "steps_used": self.step,
            "tool_calls_used": self.tool_calls,
            "llm_calls_used": self.llm_calls,
            "tokens_used": self.tokens,
        }


_FIELDS = tuple(f.name for f in fields(RunState))


def request_to_json(request: Request) -> dict[str, Any]:
    actor = request.actor
    return {
        "actor": {
            "id": actor.id,
            "roles": sorted(actor.roles),
            "is_admin": actor.is_admin,
            "display_name": actor.display_name,
        },
        "guild_id": request.guild_id,
        "channel_id": request.channel_id,
        "kind": request.kind,
        "request_id": request.request_id,
        "forced_tool": request.forced_tool,
    }


def request_from_json(data: dict[str, Any]) -> Request:
    """After a restart the surface's channel check is gone; calls were checked when proposed."""
    a = data["actor"]
    return Request(
        actor=Actor(a["id"], frozenset(a["roles"]), a["is_admin"], a.get("display_name")),
        guild_id=data["guild_id"],
        channel_id=data["channel_id"],
        kind=data["kind"],
        text="",
        request_id=data["request_id"],
        forced_tool=data.get("forced_tool"),
    )
