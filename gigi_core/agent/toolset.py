"""The tools one run offers the model, under provider-safe wire names that map back exactly."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from gigi_core.agent.state import ToolNames
from gigi_core.llm.types import ChatRequest, Tool
from gigi_core.manifest.models import ActionSpec, wire_name


@dataclass
class Toolset:
    """Wire name <-> action for this run; collisions after truncation get a numeric suffix."""

    by_wire: dict[str, ActionSpec] = field(default_factory=dict)

    @classmethod
    def build(cls, actions: list[ActionSpec]) -> Toolset:
        toolset = cls()
        for action in actions:
            name = wire_name(action.name)
            n = 2
            while name in toolset.by_wire:
                suffix = f"_{n}"
                name = wire_name(action.name)[: 64 - len(suffix)] + suffix
                n += 1
            toolset.by_wire[name] = action
        return toolset

    def wire_for(self, action: str) -> str | None:
        return self._by_action.get(action)

    def resolve(self, name: str) -> ActionSpec | None:
        """Map a proposed tool name back; the dotted name is accepted too (models do that)."""
        spec = self.by_wire.get(name)
        if spec is None and (wire := self._by_action.get(name)) is not None:
            spec = self.by_wire[wire]
        return spec

    def without(self, action: str) -> Toolset:
        return Toolset({w: s for w, s in self.by_wire.items() if s.name != action})

    @functools.cached_property
    def tools(self) -> list[Tool]:
        """Built once per toolset: a run offers the same tools on every model call."""
        return [
            Tool(
                name=wire,
                description=f"{spec.description} ({spec.safety.value})",
                parameters=spec.args,
            )
            for wire, spec in self.by_wire.items()
        ]

    @functools.cached_property
    def request(self) -> ChatRequest:
        """A chat request offering these tools; each model call copies it with its messages."""
        return ChatRequest(model="profile", messages=[], tools=self.tools)

    def names(self) -> ToolNames:
        """Built once per toolset; the runtime's toolsets are shared by the runs they offer."""
        return self._names

    @functools.cached_property
    def _names(self) -> ToolNames:
        return ToolNames({wire: spec.name for wire, spec in self.by_wire.items()})

    @functools.cached_property
    def _by_action(self) -> dict[str, str]:
        by_action: dict[str, str] = {}
        for wire, spec in self.by_wire.items():
            by_action.setdefault(spec.name, wire)
        return by_action

    @classmethod
    def from_names(cls, names: dict[str, str], actions: dict[str, ActionSpec]) -> Toolset:
        """Rebuild after a restart from stored names; actions that vanished are dropped."""
        return cls({w: actions[a] for w, a in names.items() if a in actions})
