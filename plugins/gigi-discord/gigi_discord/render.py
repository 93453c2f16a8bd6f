"""Render a runtime Reply as Discord messages: under 2,000 characters each, pinging nobody."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import discord

from gigi_core.surfaces import ConfirmationPrompt, Reply, cap_text, split_text

log = logging.getLogger(__name__)
LIMIT = 2000
NO_PINGS = discord.AllowedMentions.none()
Sender = Callable[..., Awaitable[discord.Message | None]]


_MENTION = re.compile(r"@")
ZWSP = "\u200b"


def prompt_text(prompt: ConfirmationPrompt) -> str:
    """The question, then the arguments being approved in a code block they cannot leave."""
    stamp = int(prompt.expires_at.timestamp())
    summary = prompt.summary if len(prompt.summary) <= 700 else prompt.summary[:699] + "…"
    text = (
        f"**Needs confirmation:** {summary} (run `{prompt.run_id}`; "
        f"the buttons expire <t:{stamp}:R>.)"
    )
    if prompt.arguments:
        text += f"\n```text\n{fenced(prompt.arguments)}\n```"
    return text


def fenced(text: str) -> str:
    """Safe inside a code block: no backtick run can close it, no ``@`` can become a mention
    (nothing pings anyway: every message is sent with ``allowed_mentions`` none)."""
    return _MENTION.sub("@" + ZWSP, text.replace("`", "`" + ZWSP))


def reply_parts(reply: Reply, notes: list[str] | None = None) -> list[str]:
    """Answer text, then tool facts verbatim, then confirmation prompts (the buttons follow)."""
    parts = list(notes or [])
    if reply.text.strip():
        parts.append(reply.text.strip())
    for c in reply.citations:
        parts.append(f"`{c.tool}` → {json.dumps(c.result, ensure_ascii=False, sort_keys=True)}")
    refused = reply.refusal_note()  # Gigi's own word, whatever the model's text claims
    if refused:
        parts.append(refused)
    if reply.disclosure:  # a run billed to the member's key left the server's context out
        parts.append(f"*{reply.disclosure}*")
    parts.extend(prompt_text(p) for p in reply.components)
    if not parts:
        parts.append("(no answer)")
    return parts


def chunk(reply: Reply, notes: list[str] | None = None) -> list[str]:
    """Split on paragraph, line, then word boundaries so every message is valid for Discord."""
    return split_text("\n\n".join(reply_parts(reply, notes)), LIMIT)


async def send_reply(
    interaction: discord.Interaction[Any],
    reply: Reply,
    *,
    bot: Any,
    admin: bool,
    ephemeral: bool = False,
    notes: list[str] | None = None,
    files: list[discord.File] | None = None,
) -> list[discord.Message]:
    """Follow up a deferred interaction with a run's reply.

    A failed run is told only to the person who asked (even after a public "thinking…"),
    and what its provider or configuration said only to admins (``for_audience``).
    """
    from gigi_discord.errors import (
        PUBLIC_THINKING,
        answered_publicly,
        for_audience,
        privately,
        remember_failure,
    )

    remember_failure(bot, reply)
    private = ephemeral or reply.status == "failed"
    dm = interaction.guild is None
    reply = for_audience(reply, admin=admin, private=private, dm=dm)
    send = interaction.followup.send
    guild = interaction.guild
    shown = {"disclosed_to": (str(interaction.user.id), str(guild.id)) if guild else None}
    if private and interaction.extras.get(PUBLIC_THINKING):
        async with privately(interaction):
            return await deliver(
                send, reply, bot=bot, notes=notes, files=files, wait=True, ephemeral=True, **shown
            )
    if not private:
        answered_publicly(interaction)
    return await deliver(
        send, reply, bot=bot, notes=notes, files=files, wait=True, ephemeral=private, **shown
    )


def _whole_answer(reply: Reply) -> discord.File | None:
    """A file with the full answer when the text was cut, as the cut note promises."""
    import io

    if not reply.text or not cap_text(reply.text.strip()).truncated:
        return None
    return discord.File(io.BytesIO(reply.text.encode("utf-8")), filename="answer.md")


_LABEL = re.compile(r"\[(\d{1,3})\](?!\()")


def with_source_links(reply: Reply) -> Reply:
    """``[2]`` in the answer becomes a jump link to the message the context pack cited
    (without an embed); labels the pack did not give, or gave without a URL, stay text."""
    if not reply.sources or not reply.text:
        return reply

    def link(m: re.Match[str]) -> str:
        url = reply.sources.get(m.group(1))
        return f"[[{m.group(1)}]](<{url}>)" if url else m.group(0)

    return replace(reply, text=_LABEL.sub(link, reply.text))


async def deliver(
    send: Sender,
    reply: Reply,
    *,
    bot: Any,
    notes: list[str] | None = None,
    first_kwargs: dict[str, Any] | None = None,
    files: list[discord.File] | None = None,
    disclosed_to: tuple[str, str] | None = None,
    **kwargs: Any,
) -> list[discord.Message]:
    """Send every chunk through ``send``; the buttons and any files ride on the last one.
    ``disclosed_to`` (member, guild): whose disclosure button a ``reply.disclosure`` gets.

    ``send`` is ``channel.send`` or ``interaction.followup.send``: both accept the same
    keywords, so mentions, slash commands and button follow-ups render identically.
    """
    from gigi_discord.commands.llm_key import disclosure_view
    from gigi_discord.confirm import decision_view

    reply = with_source_links(reply)
    pieces = chunk(reply, notes)
    whole = _whole_answer(reply)
    if whole is not None:  # the answer was cut to GIGI_REPLY_MAX_CHARS: attach all of it
        files = [*(files or []), whole]
    sent: list[discord.Message] = []
    for index, piece in enumerate(pieces):
        extra: dict[str, Any] = dict(kwargs)
        if index == 0 and first_kwargs:
            extra.update(first_kwargs)
        last = index == len(pieces) - 1
        if last and reply.components:
            extra["view"] = decision_view(reply.components[0])
        elif last and reply.disclosure and disclosed_to is not None:
            extra["view"] = disclosure_view(*disclosed_to)
        if last and files:
            extra["files"] = files
        message = await send(piece, allowed_mentions=NO_PINGS, **extra)
        if message is not None:
            sent.append(message)
    if reply.components and sent:
        bot.schedule_expiry(sent[-1], reply.components[0])
    return sent
