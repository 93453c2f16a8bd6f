"""Pictures a member attached: held in memory for the run's model calls, never stored.

A surface downloads and checks attachments, then hands them over on ``Request.images``.
They join the current question as image parts only while a request is being sent, so
run state, journals, traces and usage rows keep ids, sizes and types, never the bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gigi_core.errors import GigiError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from gigi_core.agent.contracts import Request
    from gigi_core.agent.runtime import AgentRuntime
    from gigi_core.llm.channel_policy import Place
    from gigi_core.llm.types import ChatRequest, ChatResponse

VISION_HINT = (
    "an admin can choose a model that reads pictures: /llm profile set purpose:vision "
    "(or gigi llm profile set --purpose vision)"
)


class ImagesNotAccepted(GigiError):
    """The model that would answer takes no pictures; says how an admin picks one that does."""

    def sentence(self) -> str:
        """What the member reads: the reason, then what an admin can change."""
        hint = self.hint or VISION_HINT
        return f"{self.message}. {hint[:1].upper()}{hint[1:]}."


@dataclass(frozen=True)
class AttachedImage:
    """One checked picture: its bytes (memory only) and the facts that may be recorded."""

    id: str  # the surface's attachment id
    media_type: str
    size: int
    width: int
    height: int
    data: bytes = field(repr=False, compare=False)

    def meta(self) -> dict[str, Any]:
        """What runs and logs may keep: never the bytes."""
        return {
            "id": self.id,
            "media_type": self.media_type,
            "size": self.size,
            "width": self.width,
            "height": self.height,
        }


def with_images(request: ChatRequest, images: tuple[AttachedImage, ...]) -> ChatRequest:
    """``request`` with the pictures added to its last user message (the current question)."""
    from gigi_core.llm.types import ImagePart, TextPart, UserMessage

    messages = list(request.messages)
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, UserMessage):
            content = message.content
            parts = [TextPart(text=content)] if isinstance(content, str) else list(content)
            parts.extend(ImagePart.from_bytes(i.data, i.media_type) for i in images)
            messages[index] = UserMessage(content=parts)
            break
    return request.model_copy(update={"messages": messages})


async def call(
    runtime: AgentRuntime,
    request: ChatRequest,
    origin: Request,
    *,
    dm: bool,
    places: Sequence[Place] = (),
) -> ChatResponse:
    """One model call with the pictures, on the ``vision`` profile (else ``chat``).

    ``dm`` and ``places`` as the run's other calls have them (``billing.is_dm``,
    ``place_policy.places_of``): the place's vision model, a thread's channel budget.
    Refuses before sending when the resolved profile declares no image input; a model
    that still refuses the picture becomes the same readable refusal.
    """
    from gigi_core.llm.errors import ProviderError
    from gigi_core.llm.image_rules import accepts_images

    llm = runtime.kernel.llm
    pay = origin.billing or "auto"  # who pays, as decided for the run (``billing.decide``)
    resolution = await llm.resolve(
        origin.guild_id, "vision", origin.actor, dm=dm, billing=pay, places=places
    )
    if not accepts_images(resolution, llm.provider(resolution.provider)):
        raise ImagesNotAccepted(
            f"The model that answers here ({resolution.model}) does not read pictures, "
            "so I cannot look at your attachment",
            hint=VISION_HINT,
        )
    try:
        return await llm.chat(
            with_images(request, origin.images),
            guild_id=origin.guild_id,
            actor=origin.actor,
            channel_id=origin.channel_id,
            purpose="vision",
            places=places,
            dm=dm,
            billing=pay,
            request_id=origin.request_id,
            durability=runtime.durability,
        )
    except ProviderError as exc:
        if exc.error_class not in ("bad_request", "unsupported"):
            raise
        raise ImagesNotAccepted(
            f"The model {resolution.model} did not take the picture: {exc.provider_message}",
            hint=exc.hint or VISION_HINT,
        ) from None
