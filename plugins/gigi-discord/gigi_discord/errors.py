"""Turn failures into sentences a guild admin or user can act on (never a traceback)."""

from __future__ import annotations

import logging
import re

import discord
from discord import app_commands

from gigi_core import GigiError

log = logging.getLogger(__name__)

SETUP_HINT = (
    "No language model is set up for this server yet. A server admin can add a key with "
    "`/llm credential add` and choose a model with `/llm profile set`."
)
DM_SETUP_HINT = (
    "I have no language model for direct messages. The operator can allow one with "
    "GIGI_TENANT_FALLBACK, or talk to me in a server that set one up."
)


class Refusal(app_commands.CheckFailure):
    """A runtime check said no; the message is shown as is (ephemeral)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _cli_free(text: str) -> str:
    """Kernel hints name CLI commands; on Discord the slash commands are the way."""
    replacements = [
        (r"`?gigi llm credential add[^`;)]*`?", "`/llm credential add`"),
        (r"`?gigi llm profile set[^`;)]*`?", "`/llm profile set`"),
        (r"`?gigi llm policy set[^`;)]*`?", "the operator's `gigi llm policy set`"),
        (r"`?gigi plugins enable[^`;)]*`?", "`/gigi plugins enable`"),
        (r"`(?:gigi )?grants add ([\w.*-]+)`", r"`/gigi grants add capability:\1`"),
        (r"\bguild admin\b", "server admin"),
        (r"pass --model <model id>", "give the `model` option"),
        (r"pass --base-url URL", "give the `base_url` option"),
    ]
    for pattern, new in replacements:
        text = re.sub(pattern, new, text)
    return text


def sentence(text: str) -> str:
    """Capitalised and ending in a full stop, so replies read like sentences."""
    text = _cli_free(text.strip())
    if not text:
        return "Something went wrong."
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?)`" else text + "."


def describe(error: BaseException) -> str:
    """The user-facing sentence for an error; unexpected ones are logged, not shown."""
    if isinstance(error, app_commands.CommandInvokeError):
        error = error.original
    if isinstance(error, Refusal):
        return error.message
    if isinstance(error, GigiError):
        from gigi_core.llm import NothingToResolve

        if isinstance(error, NothingToResolve):
            return SETUP_HINT
        return sentence(str(error))
    if isinstance(error, app_commands.MissingPermissions):
        return "You need the Manage Server permission for this command."
    if isinstance(error, app_commands.NoPrivateMessage):
        return "This command only works in a server."
    if isinstance(error, app_commands.CommandOnCooldown):
        return f"Slow down: try again in {error.retry_after:.0f} seconds."
    if isinstance(error, app_commands.CheckFailure):
        return "You cannot use this command here."
    if isinstance(error, discord.Forbidden):
        return "Discord refused that: I am missing a permission in this channel."
    log.error("unexpected error in a Discord handler", exc_info=error)
    return "Something went wrong on Gigi's side; it was logged for the operator."


async def tell(interaction: discord.Interaction, text: str, *, ephemeral: bool = True) -> None:
    """Answer an interaction whether or not it was already acknowledged."""
    text = text[:2000]
    try:
        if interaction.response.is_done():
            await interaction.followup.send(
                text, ephemeral=ephemeral, allowed_mentions=discord.AllowedMentions.none()
            )
        else:
            await interaction.response.send_message(
                text, ephemeral=ephemeral, allowed_mentions=discord.AllowedMentions.none()
            )
    except discord.HTTPException as exc:  # expired token, deleted channel: nothing to retry
        log.warning("could not answer interaction %s: %s", interaction.id, exc)
