"""The agent runtime: the LLM proposes; Gigi validates, decides and executes."""

from gigi_core.agent.contracts import Budgets, ConfirmationPrompt, Reply, Request

__all__ = ["Budgets", "ConfirmationPrompt", "Reply", "Request"]
