"""Pictures attached to a mention, a DM or `/ask image:`: checked, fetched, handed to the run.

Everything Discord states about an attachment (count, size, content type, URL) is
checked before a byte is fetched; the bytes come through the bot's own HTTP client, only
from Discord's CDN hosts, within a size cap and a timeout, and are sniffed for what they
really are. Nothing of them is stored: the run gets ``AttachedImage`` (memory only).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from gigi_core import ConfigError
from gigi_core.llm import ImageRejected, ImageRules, check_image
from gigi_core.surfaces import AttachedImage

log = logging.getLogger(__name__)
MB = 1024 * 1024
CDN_HOSTS = ("cdn.discordapp.com", "media.discordapp.net")
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
DEFAULT_QUESTION = "What is in this picture?"


class AttachmentRefused(Exception):
    """An attachment Gigi will not fetch or send; ``str()`` is the member-facing reason."""


@dataclass(frozen=True)
class ImageLimits:
    """Per-message limits (``GIGI_DISCORD_IMAGE_*``): how many, how large, from where."""

    max_count: int = 4
    max_bytes: int = 10 * MB
    max_side: int = 8000
    timeout: float = 15.0
    hosts: tuple[str, ...] = CDN_HOSTS

    @classmethod
    def from_env(cls) -> ImageLimits:
        """``GIGI_DISCORD_IMAGE_MAX_COUNT``, ``..._MAX_MB``, ``..._TIMEOUT``, ``..._HOSTS``."""
        hosts = os.environ.get("GIGI_DISCORD_IMAGE_HOSTS", "")
        return cls(
            max_count=int(_number("GIGI_DISCORD_IMAGE_MAX_COUNT", cls.max_count)),
            max_bytes=int(_number("GIGI_DISCORD_IMAGE_MAX_MB", cls.max_bytes / MB) * MB),
            timeout=_number("GIGI_DISCORD_IMAGE_TIMEOUT", cls.timeout),
            hosts=tuple(h.strip().lower() for h in hosts.split(",") if h.strip()) or CDN_HOSTS,
        )

    def rules(self) -> ImageRules:
        return ImageRules(types=IMAGE_TYPES, max_bytes=self.max_bytes, max_side=self.max_side)


def _number(var: str, default: float) -> float:
    raw = os.environ.get(var, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{var} must be a number, got {raw!r}") from None
    if value <= 0:
        raise ConfigError(f"{var} must be above 0, got {raw!r}")
    return value


def screen(attachments: Sequence[Any], limits: ImageLimits) -> list[Any]:
    """The attachments to fetch, judged on what Discord states; refuses naming what to change."""
    if len(attachments) > limits.max_count:
        raise AttachmentRefused(
            f"You attached {len(attachments)} files; I read at most {limits.max_count} "
            "pictures per message. Please send fewer."
        )
    for a in attachments:
        claimed = (a.content_type or "").split(";", 1)[0].strip().lower()
        if claimed not in IMAGE_TYPES:
            raise AttachmentRefused(
                f"I can only read pictures (PNG, JPEG, GIF, WebP); {a.filename} is "
                f"{claimed or 'of unknown type'}. Please paste text as text."
            )
        if a.size > limits.max_bytes:
            raise AttachmentRefused(
                f"{a.filename} is {a.size / MB:.1f} MB; the limit is "
                f"{limits.max_bytes / MB:.1f} MB per picture. Please send a smaller one."
            )
        url = urlsplit(a.url)
        if url.scheme != "https" or (url.hostname or "").lower() not in limits.hosts:
            raise AttachmentRefused(
                f"{a.filename} is not stored on Discord's own servers, so I did not open it. "
                "Please upload the picture to Discord directly."
            )
    return list(attachments)


async def fetch(http: Any, attachment: Any, limits: ImageLimits) -> AttachedImage:
    """Download one screened attachment through the bot's client and check its bytes."""
    try:
        data = await asyncio.wait_for(http.get_from_cdn(attachment.url), limits.timeout)
    except TimeoutError:
        raise AttachmentRefused(
            f"Downloading {attachment.filename} took too long; please try again."
        ) from None
    except Exception:  # discord.HTTPException, a connection error: say so, never the URL
        raise AttachmentRefused(
            f"I could not download {attachment.filename} from Discord; please try again."
        ) from None
    if len(data) > limits.max_bytes:
        raise AttachmentRefused(
            f"{attachment.filename} is larger than Discord said; the limit is "
            f"{limits.max_bytes / MB:.1f} MB per picture."
        )
    try:
        info = check_image(data, limits.rules(), name=attachment.filename)
    except ImageRejected as exc:
        reason = f"{exc.message}. Please {exc.hint}." if exc.hint else exc.message
        raise AttachmentRefused(reason) from None
    return AttachedImage(
        id=str(attachment.id),
        media_type=info.media_type,
        size=info.size,
        width=info.width,
        height=info.height,
        data=data,
    )


async def collect(
    http: Any, attachments: Sequence[Any], limits: ImageLimits | None = None
) -> tuple[AttachedImage, ...]:
    """Screen all, then fetch each: one refusal stops before any (further) download.

    A malformed ``GIGI_DISCORD_IMAGE_*`` setting is the operator's to fix: it is logged
    with its name, and the member reads that pictures cannot be read for now.
    """
    try:
        limits = limits or ImageLimits.from_env()
    except ConfigError as exc:
        log.error("pictures refused: %s", exc)
        raise AttachmentRefused(
            "I cannot read pictures right now: one of Gigi's picture settings is wrong. "
            "The operator can see which in the log."
        ) from None
    chosen = screen(attachments, limits)
    return tuple([await fetch(http, a, limits) for a in chosen])
