"""The policy engine: default deny; allow / confirm / deny with a readable reason."""

from gigi_core.policy.actor import Actor
from gigi_core.policy.decision import Decision, Outcome

__all__ = ["Actor", "Decision", "Outcome"]
