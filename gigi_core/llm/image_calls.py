"""Image generation through ``kernel.llm``: resolved, budgeted and recorded like any call.

The ``image`` purpose has no general fallback: a chat model cannot draw. The prompt goes
to the provider only; usage rows keep provider, model, tokens and status, never the prompt.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gigi_core.llm import calls
from gigi_core.llm.budget_cost import BYTES_PER_TOKEN
from gigi_core.llm.caller import Call, check_durability
from gigi_core.llm.records import LlmConfigError
from gigi_core.llm.types import ImageRequest, ImageResponse

if TYPE_CHECKING:
    from gigi_core.llm.channel_policy import Place
    from gigi_core.llm.provider import Provider
    from gigi_core.llm.resolve import Billing
    from gigi_core.llm.service import LlmService
    from gigi_core.policy.actor import Actor

#: What one picture may cost, in tokens, for budget holds: gpt-image-1's largest
#: (1536x1024, high quality) is 6,240 output tokens; Gemini's 1,290. Settled at the real use.
TOKENS_PER_IMAGE = 6240


def most_image_tokens(request: ImageRequest) -> int:
    """The most tokens ``request`` may cost: its prompt plus the cap for each picture."""
    prompt = math.ceil(len(request.prompt.encode()) / BYTES_PER_TOKEN)
    return prompt + TOKENS_PER_IMAGE * request.count


def images_fn(request: ImageRequest) -> Call:
    async def call(provider: Provider, key: str, base_url: str | None) -> ImageResponse:
        return await provider.generate_images(request, api_key=key, base_url=base_url)

    return call


async def generate_images(
    service: LlmService,
    request_or_prompt: ImageRequest | str,
    *,
    guild_id: str | None,
    actor: Actor | str | None,
    channel_id: str | None = None,
    purpose: str = "image",
    dm: bool = False,
    billing: Billing = "auto",
    request_id: str | None = None,
    durability: str | None = None,
    places: Sequence[Place] = (),
) -> ImageResponse:
    """Resolve the ``image`` profile, hold the budget, call the provider, record usage.

    Like ``chat``: ``billing`` and ``places`` are the run's (who pays, where it was asked),
    and a role policy that allows none of the resolved model refuses before the call."""
    durability = check_durability(durability)
    resolution = await service.resolve(
        guild_id, purpose, actor, dm=dm, billing=billing, places=places
    )
    where: dict[str, Any] = calls.where(request_id, actor, guild_id, channel_id, places)
    await service.places.check_roles(resolution, where)  # as for chat: before any call
    provider = service.provider(resolution.provider)
    if not provider.supports.image_generation:
        raise LlmConfigError(
            f"the {purpose} profile uses {resolution.provider}, which cannot draw pictures",
            hint="set the image profile to a provider that offers image generation "
            "(openai or gemini): /llm profile set purpose:image",
        )
    if isinstance(request_or_prompt, ImageRequest):
        request = request_or_prompt.model_copy(update={"model": resolution.model})
    else:
        request = ImageRequest(model=resolution.model, prompt=request_or_prompt)
    size = resolution.params.get("size")
    if request.size is None and isinstance(size, str):
        request = request.model_copy(update={"size": size})
    if await service._budgeted(resolution, where):
        where["most"] = most_image_tokens(request)

    def make(model: str) -> Call:
        return images_fn(request.model_copy(update={"model": model}))

    return await service.caller.with_fallback(resolution, make, where, durability)  # type: ignore[no-any-return]
