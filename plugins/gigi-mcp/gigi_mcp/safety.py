"""Annotations -> safety class, pessimistically: a hint may only tighten what it is not trusted for.

A tool is described by three flags (writes, destructive, open world). A missing hint takes the
specification's default (writes, destructive, open world). Hints that *loosen* a flag
(``readOnlyHint: true``, ``destructiveHint: false``, ``openWorldHint: false``) count only once an
operator approved the server's definitions; hints that tighten always count. An operator's
``safety`` sets the flags instead, and explicit tightening hints are still added on top.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gigi_mcp.config import ToolOverride


@dataclass(frozen=True)
class Flags:
    writes: bool
    destructive: bool
    open_world: bool

    def __or__(self, other: Flags) -> Flags:
        return Flags(
            self.writes or other.writes,
            self.destructive or other.destructive,
            self.open_world or other.open_world,
        )


WORST = Flags(writes=True, destructive=True, open_world=True)
NONE = Flags(writes=False, destructive=False, open_world=False)
OPERATOR = {
    "read_only": NONE,
    "write": Flags(writes=True, destructive=False, open_world=False),
    "external": Flags(writes=False, destructive=False, open_world=True),
    "destructive": Flags(writes=True, destructive=True, open_world=False),
}


@dataclass(frozen=True)
class Classified:
    safety: str
    confirm: str
    why: str


def declared(annotations: dict[str, Any] | None) -> Flags:
    """What the hints claim, spec defaults filling the gaps (readOnly false, destructive true,
    openWorld true; destructive only means something for a tool that writes)."""
    hints = annotations or {}
    read_only = hints.get("readOnlyHint") is True
    destructive = hints.get("destructiveHint") is not False
    open_world = hints.get("openWorldHint") is not False
    return Flags(
        writes=not read_only, destructive=destructive and not read_only, open_world=open_world
    )


def tightening(annotations: dict[str, Any] | None) -> Flags:
    """Only the hints that make a tool more dangerous, taken at their word."""
    hints = annotations or {}
    return Flags(
        writes=hints.get("readOnlyHint") is False,
        destructive=hints.get("destructiveHint") is True and hints.get("readOnlyHint") is not True,
        open_world=hints.get("openWorldHint") is True,
    )


def classify(
    annotations: dict[str, Any] | None, override: ToolOverride | None, *, approved: bool
) -> Classified:
    """The class and confirmation rule a generated action gets."""
    if override is not None and override.safety is not None:
        flags = OPERATOR[override.safety] | tightening(annotations)
        why = f"operator set {override.safety}"
    elif approved:
        flags = declared(annotations)
        why = "annotations (approved)"
    else:
        flags = WORST | declared(annotations)
        why = "not approved yet: specification defaults"
    safety, confirm = _class_of(flags)
    if override is not None and override.confirm is not None and confirm != "always":
        confirm = override.confirm
    return Classified(safety, confirm, why)


def _class_of(flags: Flags) -> tuple[str, str]:
    """One manifest class; destructive and open world together need both effects: the
    external consent gate and a confirmation every time."""
    if flags.destructive and flags.open_world:
        return "external", "always"
    if flags.open_world:
        return "external", "policy"
    if flags.destructive:
        return "destructive", "always"
    if flags.writes:
        return "write", "policy"
    return "read_only", "policy"
