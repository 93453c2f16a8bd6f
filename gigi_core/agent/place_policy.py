"""What a place's LLM policy changes in a run: the places handed to resolution, the
admins' channel instructions in the prompt, and the ``reasoning`` purpose for planning.

The instructions are put below the system rules as their own, labelled system message:
they shape tone and topic, and nothing in them is read by code as a permission.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gigi_core.llm.channel_policy import Place, prompt_message

if TYPE_CHECKING:
    from gigi_core.agent.contracts import Request
    from gigi_core.kernel import Kernel
    from gigi_core.llm.types import ChatRequest

#: Calls that choose tools (the plan) use the guild's ``reasoning`` profile when it has
#: one; ``purpose_chain`` falls back to ``respond``, then ``chat``, within the same owner.
PLANNING, ANSWERING = "reasoning", "respond"


def places_of(request: Request) -> tuple[Place, ...]:
    """The surface's chain, or just the channel asked in; nothing outside a guild."""
    if request.kind == "dm":
        return ()
    if request.places:
        return tuple(request.places)
    return (Place("channel", request.channel_id),) if request.channel_id else ()


def purpose_of(call: ChatRequest, origin: Request) -> str:
    """A call offered tools plans the run; a plugin's persona keeps its own purpose."""
    return PLANNING if call.tools and origin.persona is None else ANSWERING


async def instructions(kernel: Kernel, request: Request) -> list[dict[str, Any]]:
    """The place's admin instructions as one system message, or none."""
    places = places_of(request)
    if not places:
        return []
    effective = await kernel.llm.places.effective(request.guild_id, places)
    text = effective.prompt.value
    return [{"role": "system", "content": prompt_message(text)}] if text else []
