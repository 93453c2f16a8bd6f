"""Who pays for a conversational run, decided before it gathers context.

The decision itself is the LLM layer's (``gigi_core.llm.personal.PersonalKeys.decide``):
the request's own choice, then the member's remembered one in this guild, else ``auto``.
Here: whether the run is in a guild at all, and the note a reply carries when guild context
was left out because the member has not yet confirmed it may go to their own provider.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gigi_core.llm.personal import DISCLOSURE_NOTE

if TYPE_CHECKING:
    from collections.abc import Sequence

    from gigi_core.agent.contracts import Request
    from gigi_core.kernel import Kernel
    from gigi_core.llm.channel_policy import Place
    from gigi_core.llm.personal import BillingDecision

__all__ = ["DISCLOSURE_NOTE", "decide", "in_guild", "is_dm"]


def is_dm(request: Request) -> bool:
    """A DM with Gigi, however it was asked (a message, or a slash command in the DM)."""
    return request.kind == "dm" or request.guild_id.startswith("dm:")


def in_guild(request: Request) -> bool:
    """A DM outside any guild carries no guild context to disclose."""
    return not (is_dm(request) and request.guild_id.startswith("dm:"))


async def decide(kernel: Kernel, request: Request, places: Sequence[Place] = ()) -> BillingDecision:
    """``places``: where it was asked, as the run's model calls pass them (a place policy
    may send a purpose to another of the guild's profiles).

    An ambient run is Gigi speaking up unasked: the server pays, never the member whose
    message it answers (their remembered ``me`` would bill their key, and send the channel's
    history to their provider, for a reply they did not ask for)."""
    return await kernel.llm.personal.decide(
        request.guild_id,
        request.actor,
        dm=is_dm(request),
        in_guild=in_guild(request),
        billing="server" if request.kind == "ambient" else request.billing,
        places=places,
    )
