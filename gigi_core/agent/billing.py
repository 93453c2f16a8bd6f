"""Who pays for a conversational run, decided before it gathers context.

The decision itself is the LLM layer's (``gigi_core.llm.personal.PersonalKeys.decide``):
the request's own choice, then the member's remembered one in this guild, else ``auto``.
Here: whether the run is in a guild at all, and the note a reply carries when guild context
was left out because the member has not yet confirmed it may go to their own provider.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gigi_core.agent.contracts import Request
    from gigi_core.kernel import Kernel
    from gigi_core.llm.personal import BillingDecision

DISCLOSURE_NOTE = (
    "This answer was billed to your personal key, so the server's context (memory, "
    "knowledge, channel history) was left out. To include it, confirm once that it may be "
    "sent to your provider: the button below, or `/llm key disclose`."
)


def in_guild(request: Request) -> bool:
    """A DM outside any guild carries no guild context to disclose."""
    return not (request.kind == "dm" and request.guild_id.startswith("dm:"))


async def decide(kernel: Kernel, request: Request) -> BillingDecision:
    return await kernel.llm.personal.decide(
        request.guild_id,
        request.actor,
        dm=request.kind == "dm",
        in_guild=in_guild(request),
        billing=request.billing,
    )
