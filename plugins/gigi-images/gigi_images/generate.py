"""``images.generate``: the ``image`` profile draws, the pictures are posted as files.

The call goes through ``kernel.llm.generate_images``: resolved to the guild's image
profile, held against its model budgets and recorded in usage like any model call. The
prompt is sent to the provider only; the result (and so the run's trace) holds names,
types, sizes and dimensions, never the prompt or the bytes.
"""

from __future__ import annotations

from typing import Any

from gigi_core import GigiError
from gigi_core.events import OutboundFile, OutboundMessage

EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}
CAPTION = "Here is the picture you asked for."


async def generate(
    ctx: Any, prompt: str, count: int = 1, reply_to: str | None = None
) -> dict[str, Any]:
    """Draw ``count`` pictures of ``prompt`` and post them in the calling channel."""
    if ctx.channel_id is None:
        raise GigiError(
            "images.generate posts its pictures in a channel, and this call has none",
            hint="ask for the picture in a channel (or the console)",
        )
    from gigi_core.llm import ImageRequest  # pydantic: loaded on the first call, not at start-up

    drawn = await ctx.kernel.llm.generate_images(
        ImageRequest(model="", prompt=prompt, count=max(1, min(4, count))),
        guild_id=ctx.guild_id,
        actor=ctx.actor,
        channel_id=ctx.channel_id,
        request_id=ctx.run_id,
        billing=ctx.billing or "auto",  # as the run that asked for it is billed
        places=ctx.places,  # the place's image model, a thread's channel budget
    )
    files = tuple(
        OutboundFile(f"picture-{i}.{EXTENSIONS.get(p.media_type, 'png')}", p.data, p.media_type)
        for i, p in enumerate(drawn.images, start=1)
    )
    caption = CAPTION if len(files) == 1 else f"Here are the {len(files)} pictures you asked for."
    posted = await ctx.kernel.outbox.post(
        OutboundMessage(ctx.guild_id, ctx.channel_id, caption, files=files, reply_to=reply_to),
        plugin="images",
    )
    return {
        "status": "posted",
        "posted": [posted.message_id],
        "pictures": [
            {
                "name": f.name,
                "media_type": p.media_type,
                "size": len(p.data),
                "width": p.width,
                "height": p.height,
            }
            for f, p in zip(files, drawn.images, strict=True)
        ],
    }
