"""Tool definitions as the bridge saw and as the operator approved them, pinned by hash.

``GIGI_HOME/mcp/pins/<server>.json`` holds ``approved`` (the definitions an operator
accepted with ``gigi mcp approve``) and ``observed`` (the last listing the bridge saw). A
tool whose observed hash differs from its approved one is quarantined.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gigi_mcp.config import write_json
from gigi_mcp.invisible import Found, clean_text, describe, visible_definition, why_refused

HASHED = ("name", "description", "inputSchema", "outputSchema", "annotations")


def definition_of(tool: Any) -> dict[str, Any]:
    """The parts of an SDK ``Tool`` that approval covers, in wire (camelCase) form."""
    raw = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
    return {key: raw[key] for key in HASHED if key in raw}


def definition_hash(definition: dict[str, Any]) -> str:
    canonical = json.dumps(
        {k: definition.get(k) for k in HASHED}, sort_keys=True, separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass
class Pins:
    """One server's approved and observed definitions, keyed by the server's tool name."""

    approved: dict[str, dict[str, Any]] = field(default_factory=dict)
    observed: dict[str, dict[str, Any]] = field(default_factory=dict)
    approved_at: str | None = None
    observed_at: str | None = None

    @property
    def is_approved(self) -> bool:
        return self.approved_at is not None

    def status(self, tool: str) -> str:
        """``pending`` (never approved), ``approved``, ``changed``, ``new`` or ``removed``."""
        if not self.is_approved:
            return "pending"
        seen, ok = self.observed.get(tool), self.approved.get(tool)
        if seen is None:
            return "removed"
        if ok is None:
            return "new"
        return "approved" if definition_hash(seen) == definition_hash(ok) else "changed"

    def quarantined(self) -> list[str]:
        return sorted(t for t in self.observed if self.status(t) in ("changed", "new"))

    def observe(self, definitions: dict[str, dict[str, Any]]) -> list[str]:
        """Record a listing; returns the tools it quarantines that were not before."""
        before = set(self.quarantined())
        self.observed = definitions
        self.observed_at = _now()
        return sorted(set(self.quarantined()) - before)

    def approve(self) -> None:
        self.approved = dict(self.observed)
        self.approved_at = _now()

    def diff(self) -> str:
        """What approving would change, as a unified diff of canonical JSON per tool.

        Each side is shown as the model will read it: invisible characters removed, and a
        ``#`` line per text saying how many went and which (``gigi_mcp.invisible``), or per
        exact string (a property name, an enum value) why they refuse the tool. Tools whose
        definitions differ only in such characters still appear, with a line saying so.
        """
        lines: list[str] = []
        for tool in sorted(set(self.approved) | set(self.observed)):
            old, new = self.approved.get(tool), self.observed.get(tool)
            if old is not None and new is not None and definition_hash(old) == definition_hash(new):
                continue
            old_seen, old_gone = _visible(old)
            new_seen, new_gone = _visible(new)
            shown = clean_text(tool)  # a name's own characters are noted as refusing it
            before = f"approved/{shown}" if old is not None else "/dev/null"
            after = f"server/{shown}" if new is not None else "/dev/null"
            body = list(
                difflib.unified_diff(
                    _pretty(old_seen), _pretty(new_seen), before, after, lineterm=""
                )
            )
            if not body:
                body = [
                    f"--- {before}",
                    f"+++ {after}",
                    "# the definitions differ only in invisible characters, which Gigi "
                    "removes before the model reads them (or refuses the tool, where it "
                    "cannot); approving pins the server's",
                ]
            lines += body
            for side, found in ((before, old_gone), (after, new_gone)):
                lines += [f"# {side} {where}: {describe(cps)}" for where, cps in found.removals]
                lines += [
                    f"# {side} {where}: refused: {why_refused(what, cps)}"
                    for where, what, cps in found.refusals
                ]
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {
            "approved": self.approved,
            "approved_at": self.approved_at,
            "observed": self.observed,
            "observed_at": self.observed_at,
        }


def _visible(definition: dict[str, Any] | None) -> tuple[dict[str, Any] | None, Found]:
    if definition is None:
        return None, Found()
    return visible_definition(definition)


def _pretty(definition: dict[str, Any] | None) -> list[str]:
    if definition is None:
        return []
    return json.dumps(definition, indent=2, sort_keys=True).splitlines()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def pins_path(root: Path, server: str) -> Path:
    return root / "pins" / f"{server}.json"


def load_pins(root: Path, server: str) -> Pins:
    path = pins_path(root, server)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Pins()
    except (OSError, ValueError):
        # A damaged pin file approves nothing: every tool is pending until approved again.
        return Pins()
    return Pins(
        approved=dict(data.get("approved") or {}),
        observed=dict(data.get("observed") or {}),
        approved_at=data.get("approved_at"),
        observed_at=data.get("observed_at"),
    )


def save_pins(root: Path, server: str, pins: Pins) -> None:
    write_json(pins_path(root, server), pins.as_dict())
