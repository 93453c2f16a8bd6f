"""A run's resumable state: what the loop needs after a pause or a restart (sealed at rest)."""

from __future__ import annotations

import base64
import copy
import functools
import json
import zlib
from dataclasses import dataclass, field, fields
from typing import Any

from gigi_core.agent import persona
from gigi_core.agent.contracts import Request
from gigi_core.llm.channel_policy import Place
from gigi_core.policy.actor import Actor

COMPRESS_AT = 64  # offered tools; below this the names are stored as plain JSON


class ToolNames(dict[str, str]):
    """Wire name -> action, frozen: one toolset's names are shared by every run it offers.

    Built once per toolset (not per turn), and encoded for the sealed state once.
    """

    @functools.cached_property
    def json_member(self) -> str:
        """The state's JSON member for these names: ``"tools": {...}``, or for a large offer
        ``"tools_z"``, zlib and base64 (142 KB of names at 3,000 tools become 22 KB)."""
        plain = json.dumps(self)
        if len(self) < COMPRESS_AT:
            return f'"tools": {plain}'
        packed = base64.b64encode(zlib.compress(plain.encode(), 1)).decode("ascii")
        return f'"tools_z": "{packed}"'

    def _frozen(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("a toolset's names are shared by its runs; build a new mapping")

    __setitem__ = __delitem__ = _frozen  # type: ignore[assignment]
    clear = pop = popitem = setdefault = update = _frozen  # type: ignore[assignment]
    __ior__ = _frozen  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (ToolNames, (dict(self),))

    def __copy__(self) -> ToolNames:
        return self  # frozen, and its values are strings

    def __deepcopy__(self, memo: dict[int, Any]) -> ToolNames:
        return self


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
    # calls refused and not since made: shown name -> why, for the reply's "Not done" note
    refused: dict[str, str] = field(default_factory=dict)
    step: int = 0
    tool_calls: int = 0
    llm_calls: int = 0
    tokens: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    # the question and the runs before it in its conversation (``followup.save``); sealed
    exchange: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """Shallow on purpose: it is serialised right away, and asdict's deep copy is slow."""
        return {name: getattr(self, name) for name in _FIELDS}

    def snapshot(self) -> dict[str, Any]:
        """``to_json`` as of now, serialised later: what the loop changes in place is copied.

        Lists and ``retries`` grow in place and the pending calls' arguments reach tool
        handlers, so those are copied; ``tools``, ``awaiting`` and ``in_flight`` are only ever
        replaced, so they are shared (``tools`` can hold thousands of names).
        """
        data = self.to_json()
        data["messages"] = list(self.messages)
        data["pending"] = copy.deepcopy(self.pending)
        data["citations"] = list(self.citations)
        data["retries"] = dict(self.retries)
        data["refused"] = dict(self.refused)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunState:
        data = dict(data)
        packed = data.pop("tools_z", None)
        if packed is not None:  # sealed by us, so authenticated: no bound on the unpacking
            data["tools"] = json.loads(zlib.decompress(base64.b64decode(packed)))
        data["tools"] = ToolNames(data.get("tools") or {})  # only ever replaced, never changed
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
        **({"persona": persona.to_json(request.persona)} if request.persona else {}),
        # attached pictures: ids, types, sizes and dimensions only (never their bytes)
        **({"images": [i.meta() for i in request.images]} if request.images else {}),
        **({"billing": request.billing} if request.billing else {}),
        # where it was asked: ids and kinds, so a resumed run keeps its place policies
        **({"places": [[p.kind, p.id] for p in request.places]} if request.places else {}),
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
        persona=persona.from_json(data.get("persona")),
        billing=data.get("billing"),
        places=tuple(Place.of(kind, ident) for kind, ident in data.get("places") or ()),
    )
