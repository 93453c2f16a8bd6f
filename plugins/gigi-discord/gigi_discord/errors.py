"""Turn failures into sentences a guild admin or user can act on (never a traceback).

Two rules about who sees what. An error is told only to the person it concerns: after a
public "thinking…" defer (``defer(..., ephemeral=False)``), ``tell`` and
``gigi_discord.render.send_reply`` replace the public placeholder by an ephemeral message.
And what a provider or the LLM configuration said (an authentication error, a credential
that cannot be unsealed) is for server admins: members get a short sentence (``for_audience``).
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import AsyncIterator
from typing import Any

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


PUBLIC_THINKING = "gigi_public_thinking"  # interaction.extras: a public defer is still pending
PROVIDER_FAILED = (
    "The language model did not answer this time, so I have no reply. Try again in a moment; "
    "if it keeps failing, a server admin can see why."
)
NOT_USABLE = (
    "The language model is not set up correctly for this server, so I cannot answer. A server "
    "admin can see why."
)
DETAIL_REASONS = {"provider_error": PROVIDER_FAILED, "no_provider": NOT_USABLE}


class Refusal(app_commands.CheckFailure):
    """A runtime check said no; the message is shown as is (ephemeral)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


_VERB = "(?:set|reset|show|remove)"
_VALUE = r"[^\s`;)-][^\s`;)]*"  # an option's value: up to the hint's end, never an option
_BUDGET_CLI = re.compile(
    rf"`?gigi llm budget ({_VERB}(?:\|{_VERB})*)((?: --[\w-]+(?: {_VALUE})?)*)`?"
)
_BUDGET_OPTION = re.compile(rf"--([\w-]+)(?: ({_VALUE}))?")
_MENTIONS = {"member": "<@{}>", "channel": "<#{}>", "role": "<@&{}>"}


def _budget_option(name: str, value: str) -> str:
    """One ``--name value`` of a budget hint as the `/llm budget` option to give (mentions
    render as names; the bot never pings)."""
    if name in ("member", "channel") and value == "*":
        return f"each {name}"
    if name in _MENTIONS and value.isdigit():
        return f"{name} {_MENTIONS[name].format(value)}"
    if name in ("model", *_MENTIONS):
        return f"{name} `{value}`"
    return f"{name.replace('-', '_')} {value}".strip()


def _budget_slash(match: re.Match[str]) -> str:
    """A ``gigi llm budget set|reset --guild G --member X --window W`` hint (a budget
    refusal's) as the slash commands and options an admin uses on Discord."""
    commands = " or ".join(f"`/llm budget {verb}`" for verb in match.group(1).split("|"))
    options = [
        _budget_option(name, value)
        for name, value in _BUDGET_OPTION.findall(match.group(2))
        if name != "guild"  # the server the command is typed in
    ]
    return commands + (f" with {', '.join(options)}" if options else "")


def _cli_free(text: str) -> str:
    """Kernel hints name CLI commands; on Discord the slash commands are the way."""
    text = _BUDGET_CLI.sub(_budget_slash, text)
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
        return sentence(error.text_for("discord"))
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


def provider_detail(reply: Any) -> str | None:
    """What a failed run's provider or LLM configuration said, when it is for admins only."""
    if reply.status != "failed" or reply.termination_reason not in DETAIL_REASONS:
        return None
    if reply.termination_reason == "no_provider" and "configured" in reply.text:
        return None  # nothing is configured: the setup hint says so to everyone
    return sentence(reply.text)


def for_audience(reply: Any, *, admin: bool, private: bool, dm: bool = False) -> Any:
    """The reply as this person may see it: provider and configuration detail only for
    admins, and only where nobody else reads it (``private``); else a short sentence. A
    server (or DM) with no model at all gets the setup hint, in Discord's terms."""
    if reply.termination_reason == "no_provider" and "configured" in reply.text:
        reply.text = DM_SETUP_HINT if dm else SETUP_HINT
        return reply
    detail = provider_detail(reply)
    if detail is None:
        return reply
    short = DETAIL_REASONS[reply.termination_reason]
    if admin and private:
        reply.text = f"{short}\n\n**What happened** (only admins see this): {detail}"
    elif admin and reply.run_id:
        reply.text = (
            f"{short} `/agent trace run:{reply.run_id}` shows you why (only you will see it)."
        )
    else:
        reply.text = short
    return reply


async def defer(interaction: discord.Interaction[Any], *, ephemeral: bool) -> None:
    """``defer(thinking=True)``, remembering a public one: an error told afterwards must not
    replace the public "thinking…" message (it would be shown to the whole channel)."""
    await interaction.response.defer(ephemeral=ephemeral, thinking=True)
    if not ephemeral:
        interaction.extras[PUBLIC_THINKING] = True


def remember_failure(bot: Any, reply: Any, limit: int = 256) -> None:
    """Keep what a failed run's provider said (in memory) for ``/agent trace`` by admins."""
    detail = provider_detail(reply)
    failures = getattr(bot, "failures", None)
    if detail is None or reply.run_id is None or failures is None:
        return
    failures[reply.run_id] = detail
    while len(failures) > limit:
        failures.pop(next(iter(failures)))


def answered_publicly(interaction: discord.Interaction[Any]) -> None:
    """A public followup replaced the "thinking…" message: later ones are new messages."""
    interaction.extras.pop(PUBLIC_THINKING, None)


@contextlib.asynccontextmanager
async def privately(interaction: discord.Interaction[Any]) -> AsyncIterator[None]:
    """Inside, ephemeral followups are really ephemeral, even after a public defer.

    The first followup of a pending defer *edits* the "thinking…" message, which keeps the
    defer's visibility whatever the followup asks. So the placeholder is completed first,
    the private messages follow as new messages, and the placeholder is deleted.
    """
    public = interaction.extras.pop(PUBLIC_THINKING, False)
    if public:
        try:
            await interaction.edit_original_response(content="…")
        except discord.HTTPException as exc:
            log.info("could not complete interaction %s: %s", interaction.id, exc)
            public = False
    try:
        yield
    finally:
        if public:
            try:
                await interaction.delete_original_response()
            except discord.HTTPException as exc:
                log.info("could not remove the placeholder of %s: %s", interaction.id, exc)


async def tell(interaction: discord.Interaction, text: str, *, ephemeral: bool = True) -> None:
    """Answer an interaction whether or not it was already acknowledged."""
    text = text[:2000]
    if ephemeral and interaction.extras.get(PUBLIC_THINKING):
        async with privately(interaction):
            await _send(interaction, text, ephemeral=True)
        return
    if not ephemeral:
        answered_publicly(interaction)
    await _send(interaction, text, ephemeral=ephemeral)


async def _send(interaction: discord.Interaction, text: str, *, ephemeral: bool) -> None:
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
