"""A policy decision: allow, confirm or deny, with a reason a user can read."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Outcome(StrEnum):
    allow = "allow"
    confirm = "confirm"
    deny = "deny"


@dataclass(frozen=True)
class Decision:
    """``code`` is a stable machine tag for audits; ``reason`` is the sentence for people."""

    outcome: Outcome
    reason: str
    code: str

    @classmethod
    def allow(cls, reason: str = "allowed", code: str = "allowed") -> Decision:
        return cls(Outcome.allow, reason, code)

    @classmethod
    def confirm(cls, reason: str, code: str = "confirm") -> Decision:
        return cls(Outcome.confirm, reason, code)

    @classmethod
    def deny(cls, reason: str, code: str = "denied") -> Decision:
        return cls(Outcome.deny, reason, code)

    @property
    def allowed(self) -> bool:
        return self.outcome is Outcome.allow
