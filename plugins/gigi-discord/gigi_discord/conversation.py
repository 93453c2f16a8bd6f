"""Mentions, replies to the bot and DMs become runtime Requests; the answer goes back in place."""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import discord

from gigi_core.surfaces import Reply, Request
from gigi_discord.attachments import DEFAULT_QUESTION, AttachmentRefused, collect
from gigi_discord.errors import for_audience, remember_failure
from gigi_discord.identity import channel_checker, channel_lister, guild_key, resolve_actor
from gigi_discord.places import answers_replies, mentioned, places_of
from gigi_discord.render import NO_PINGS, deliver
from gigi_discord.throttle import SLOW_DOWN

if TYPE_CHECKING:
    from gigi_discord.bot import GigiBot

log = logging.getLogger(__name__)
MAX_INPUT = 4000  # Discord's own ceiling (Nitro); longer text never reaches the model
SEND_WARN_EVERY = 3600.0
USER_MESSAGES = (discord.MessageType.default, discord.MessageType.reply)


def addressed(bot: GigiBot, message: discord.Message) -> bool:
    """A direct @mention, a mention of the bot's own role, or a reply to one of its messages.

    ``@everyone`` and ``@here`` do not count: they would make the bot answer every ping.
    """
    me = bot.user
    if me is None:
        return False
    if me.id in message.raw_mentions:
        return True
    if message.guild is not None:
        own = message.guild.self_role
        if own is not None and own.id in message.raw_role_mentions:
            return True
    ref = message.reference
    resolved = ref.resolved if ref is not None else None
    return isinstance(resolved, discord.Message) and resolved.author.id == me.id


def clean_text(bot: GigiBot, message: discord.Message) -> str:
    """Drop the bot's own mention; show other mentions as names the model can read."""
    text = message.content or ""
    if bot.user is not None:
        text = re.sub(rf"<@!?{bot.user.id}>", "", text)
        if message.guild is not None and message.guild.self_role is not None:
            text = text.replace(f"<@&{message.guild.self_role.id}>", "")
    names = {u.id: u.display_name for u in message.mentions}

    def user(m: re.Match[str]) -> str:
        return "@" + names.get(int(m.group(1)), "someone")

    text = re.sub(r"<@!?(\d+)>", user, text)
    return text.strip()


def can_send(bot: GigiBot, channel: Any) -> bool:
    """Whether the bot may post here; warned about once an hour per channel, never retried."""
    guild = getattr(channel, "guild", None)
    if guild is None:
        return True
    perms = channel.permissions_for(guild.me)
    if isinstance(channel, discord.Thread):
        allowed = perms.send_messages_in_threads
    else:
        allowed = perms.send_messages
    if allowed and perms.view_channel:
        return True
    now = time.monotonic()
    if now - bot._send_warned.get(channel.id, -SEND_WARN_EVERY) >= SEND_WARN_EVERY:
        bot._send_warned[channel.id] = now
        log.warning(
            "cannot send messages in channel %s of guild %s; ignoring mentions there until "
            "Gigi gets Send Messages",
            channel.id,
            guild.id,
        )
    return False


@contextlib.asynccontextmanager
async def typing(channel: Any) -> AsyncIterator[None]:
    """Show typing while the run works; a channel that refuses typing still gets the answer."""
    try:
        indicator = channel.typing()
        await indicator.__aenter__()
    except discord.HTTPException:
        indicator = None
    try:
        yield
    finally:
        if indicator is not None:
            with contextlib.suppress(discord.HTTPException):
                await indicator.__aexit__(None, None, None)


async def answer(bot: GigiBot, message: discord.Message, text: str) -> None:
    """A short plain answer in place (used for problems with the input itself)."""
    await safe_send(bot, message, Reply(text=text))


async def safe_send(
    bot: GigiBot, message: discord.Message, reply: Reply, notes: list[str] | None = None
) -> None:
    ref = message.to_reference(fail_if_not_exists=False)
    try:
        sent = await deliver(
            message.channel.send,
            reply,
            bot=bot,
            notes=notes,
            first_kwargs={"reference": ref, "mention_author": False},
            disclosed_to=(
                (str(message.author.id), str(message.guild.id)) if message.guild else None
            ),
        )
        if reply.run_id:  # a reply to any of these continues that run's conversation
            bot.answered.remember([m.id for m in sent], reply.run_id)
    except discord.Forbidden:
        log.warning(
            "Discord refused a reply in channel %s (missing permission)", message.channel.id
        )
    except discord.HTTPException as exc:
        log.warning("could not reply in channel %s: %s", message.channel.id, exc)


def readable(reply: Reply, dm: bool, *, admin: bool = False, bot: Any = None) -> Reply:
    """Runs that could not reach a model say what an admin can do, in Discord terms; what
    the provider said goes to admins only (a DM is private, a channel is not)."""
    if bot is not None:
        remember_failure(bot, reply)
    return for_audience(reply, admin=admin, private=dm, dm=dm)


async def handle_message(bot: GigiBot, message: discord.Message) -> None:
    """Ignore everything not addressed to Gigi, cheaply, before touching the store."""
    author = message.author
    if author.bot or message.webhook_id is not None or message.type not in USER_MESSAGES:
        return
    dm = message.guild is None
    if not dm and not addressed(bot, message):
        return
    if not dm and not mentioned(bot, message) and not await answers_replies(bot, message):
        return  # a reply to Gigi without a mention, where it answers mentions only
    if not can_send(bot, message.channel):
        return
    text = clean_text(bot, message)
    notes: list[str] = []
    if message.attachments and not text:
        text = DEFAULT_QUESTION
    if not text:
        if not message.content and not dm:  # a reply without a ping: Discord hid the text
            await answer(bot, message, "Mention me in your message so I can read it.")
        else:
            await answer(bot, message, "Hi! Ask me something after the mention.")
        return
    if len(text) > MAX_INPUT:
        await answer(
            bot,
            message,
            f"That message is too long for me ({len(text):,} characters; the limit is "
            f"{MAX_INPUT:,}). Please shorten it.",
        )
        return
    if not await bot.throttle.allow(guild_key(message.guild, author), str(author.id)):
        await answer(bot, message, SLOW_DOWN)
        return
    try:  # checked before any download; the bytes stay in memory for this run only
        images = await collect(bot.http, message.attachments) if message.attachments else ()
    except AttachmentRefused as refused:
        await answer(bot, message, str(refused))
        return
    actor = await resolve_actor(bot.kernel, author)
    request = Request(
        actor=actor,
        guild_id=guild_key(message.guild, author),
        channel_id=str(message.channel.id),
        kind="dm" if dm else "mention",
        text=text,
        message_ids=(str(message.id),),
        channel_visible=channel_checker(message.guild, author),
        # The answer is posted here: only what everyone reading this channel may read.
        visible_channels=channel_lister(message.guild, author, shown_in=message.channel),
        follows_run=bot.answered.run_for(message.reference),
        places=places_of(message.channel, bot),  # the place policies of where it was asked
        images=images,
    )
    try:
        async with typing(message.channel):
            reply = await bot.runtime.handle(request)
    except Exception:
        log.exception("agent run failed for message %s", message.id)
        reply = Reply(text="Something went wrong on Gigi's side; it was logged for the operator.")
    await safe_send(bot, message, readable(reply, dm, admin=actor.is_admin, bot=bot), notes)


__all__ = ["NO_PINGS", "addressed", "clean_text", "handle_message"]
