"""Confirm / Reject buttons that survive restarts and decide a confirmation exactly once.

The confirmation id lives in each button's ``custom_id`` and a ``DynamicItem`` template
matches it, so a click is routed without any in-memory view: after a restart, the kernel's
confirmation record is the only state needed. Exactly-once comes from the kernel (a
conditional update claims the record); here we only check who may press, gate on the
plugin still being enabled, and keep the message's buttons honest.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import discord

from gigi_core import GigiError
from gigi_core.surfaces import ConfirmationError, ConfirmationPrompt
from gigi_discord.errors import defer, sentence, tell
from gigi_discord.identity import channel_checker, channel_lister, guild_key, resolve_actor

if TYPE_CHECKING:
    from gigi_discord.bot import GigiBot

log = logging.getLogger(__name__)
TEMPLATE = r"gigi:c:(?P<verb>y|n):(?P<cid>[A-Za-z0-9_]{1,80})"
REFUSED = "Only the person who asked, or a server admin, can decide this."


class DecisionButton(discord.ui.DynamicItem[discord.ui.Button[Any]], template=TEMPLATE):
    """One button of the pair; ``gigi:c:y:<id>`` confirms, ``gigi:c:n:<id>`` rejects."""

    def __init__(self, verb: str, confirmation_id: str, *, disabled: bool = False) -> None:
        approve = verb == "y"
        super().__init__(
            discord.ui.Button(
                label="Confirm" if approve else "Reject",
                style=discord.ButtonStyle.success if approve else discord.ButtonStyle.danger,
                custom_id=f"gigi:c:{verb}:{confirmation_id}",
                disabled=disabled,
            )
        )
        self.verb = verb
        self.confirmation_id = confirmation_id

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction[Any],
        item: discord.ui.Item[Any],
        match: Any,
        /,
    ) -> DecisionButton:
        return cls(match["verb"], match["cid"])

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        await decide(interaction, self.confirmation_id, approve=self.verb == "y", button=True)


def decision_view(prompt: ConfirmationPrompt, *, disabled: bool = False) -> discord.ui.View:
    view = discord.ui.View(timeout=None)
    view.add_item(DecisionButton("y", prompt.confirmation_id, disabled=disabled))
    view.add_item(DecisionButton("n", prompt.confirmation_id, disabled=disabled))
    return view


def closed_view(confirmation_id: str) -> discord.ui.View:
    view = discord.ui.View(timeout=None)
    view.add_item(DecisionButton("y", confirmation_id, disabled=True))
    view.add_item(DecisionButton("n", confirmation_id, disabled=True))
    return view


def _with_note(content: str, note: str) -> str:
    joined = f"{content}\n\n{note}" if content else note
    return joined if len(joined) <= 2000 else content


async def close_message(message: discord.Message | None, confirmation_id: str, note: str) -> None:
    """Disable both buttons and say why; a message we cannot edit any more is fine."""
    if message is None:
        return
    try:
        await message.edit(
            content=_with_note(message.content, note),
            view=closed_view(confirmation_id),
            allowed_mentions=discord.AllowedMentions.none(),
        )
    except discord.HTTPException as exc:
        log.info("could not disable buttons on message %s: %s", message.id, exc)


def closed_text(row: Any, run: Any) -> str:
    """Why a confirmation can no longer be decided, before anything is deferred."""
    if run.status == "cancelled":
        return f"Run `{run.id}` was cancelled, so this can no longer be decided."
    if row.state in ("approved", "executing", "done"):
        return "This action was already confirmed (it never runs twice)."
    if row.state == "rejected":
        return "This action was already rejected."
    if row.state == "expired":
        return "This confirmation expired; ask again."
    if row.state == "failed":
        return "This action changed since it was proposed, so it was not run; ask again."
    return f"Run `{run.id}` is {run.status}; nothing is waiting for a decision."


async def decide(
    interaction: discord.Interaction[Any],
    confirmation_id: str,
    *,
    approve: bool,
    button: bool,
) -> None:
    """A click (or `/agent confirm|reject`): check, claim once, run, show the result."""
    bot: GigiBot = interaction.client  # type: ignore[assignment]
    runtime = bot.runtime
    perms = interaction.permissions if interaction.guild is not None else None
    actor = await resolve_actor(bot.kernel, interaction.user, perms)
    message = interaction.message if button else bot.prompt_messages.get(confirmation_id)
    try:
        row = await runtime.confirmations.get(confirmation_id)
        run = await runtime.runs.get(row.run_id)
    except GigiError:
        await tell(interaction, "This confirmation no longer exists.")
        return
    if run.guild_id != guild_key(interaction.guild, interaction.user):
        await tell(interaction, "This confirmation belongs to another server or conversation.")
        return
    if actor.id != row.requester_id and not actor.is_admin:
        await tell(interaction, REFUSED)
        return
    if not button and run.channel_id and str(interaction.channel_id) != run.channel_id:
        # The result would be posted here, maybe in front of people who cannot see that channel.
        await tell(interaction, f"Decide this in <#{run.channel_id}>, or with its buttons.")
        return
    if run.status != "awaiting_confirmation" or row.state != "pending":
        text = closed_text(row, run)
        await tell(interaction, text)
        await close_message(message, confirmation_id, f"*{text}*")
        bot.forget_prompt(confirmation_id)
        return
    spec = bot.kernel.registry.actions.get(row.action)
    if approve and spec is not None and row.state == "pending":
        state = await bot.kernel.plugin_state.get(run.guild_id, spec.plugin)
        if state is None or not state.enabled:
            await tell(
                interaction,
                f"{spec.plugin} is not enabled in this server any more, so this action cannot run.",
            )
            return
    private = is_private(bot, message, run, row.action)
    if button:
        await interaction.response.defer()
    else:
        await defer(interaction, ephemeral=private)
    try:
        reply = await runtime.decide(
            confirmation_id,
            actor,
            approve=approve,
            channel_visible=channel_checker(interaction.guild, interaction.user),
            visible_channels=channel_lister(
                interaction.guild,
                interaction.user,
                shown_in=None if private else interaction.channel,
            ),
            guild_id=guild_key(interaction.guild, interaction.user),
        )
    except GigiError as exc:
        text = sentence(str(exc))
        await tell(interaction, text)
        fresh = await runtime.confirmations.get(confirmation_id)
        if fresh.state != "pending":
            await close_message(message, confirmation_id, f"*{text}*")
            bot.forget_prompt(confirmation_id)
        return
    verb = "Confirmed" if approve else "Rejected"
    note = f"*{verb} by {interaction.user.mention}.*"
    if button and _ephemeral(message):
        await close_own_prompt(interaction, message, confirmation_id, note)
    else:
        await close_message(message, confirmation_id, note)
    bot.forget_prompt(confirmation_id)
    from gigi_discord.results import send_result

    await send_result(interaction, reply, bot=bot, ephemeral=private, admin=actor.is_admin)


def _ephemeral(message: discord.Message | None) -> bool:
    return message is not None and message.flags.ephemeral


def is_private(bot: GigiBot, message: discord.Message | None, run: Any, action: str) -> bool:
    """Whether the result goes only to the one who decided: the prompt was ephemeral (an
    admin command, a member's own data), or the run is such a command's direct call."""
    if _ephemeral(message):
        return True
    if getattr(run, "kind", None) != "direct":
        return False
    from gigi_discord.results import DM_FILES

    table = getattr(bot.kernel, "commands", None)
    specs = [c for c in table.sorted() if c.action == action] if table is not None else []
    return action in DM_FILES or any(c.ephemeral for c in specs)


async def close_own_prompt(
    interaction: discord.Interaction[Any],
    message: discord.Message | None,
    confirmation_id: str,
    note: str,
) -> None:
    """An ephemeral prompt can only be edited through the interaction of its own button."""
    content = message.content if message is not None else ""
    try:
        await interaction.edit_original_response(
            content=_with_note(content, note),
            view=closed_view(confirmation_id),
            allowed_mentions=discord.AllowedMentions.none(),
        )
    except discord.HTTPException as exc:
        log.info("could not disable buttons on an ephemeral prompt: %s", exc)


async def expire_later(bot: GigiBot, message: discord.Message, prompt: ConfirmationPrompt) -> None:
    """At expiry, disable the buttons if nobody decided (a click later is refused anyway)."""
    await expire_at(bot, message, prompt.confirmation_id, prompt.expires_at)


async def expire_at(
    bot: GigiBot, message: discord.Message, confirmation_id: str, expires_at: Any
) -> None:
    """Sleep until ``expires_at``, then disable the buttons if the confirmation is still open."""
    import asyncio
    from datetime import UTC, datetime

    # The kernel's clock set expires_at, so measure with it (not discord.utils.utcnow).
    delay = (expires_at - datetime.now(UTC)).total_seconds()
    await asyncio.sleep(max(0.0, delay))
    try:
        row = await bot.runtime.confirmations.get(confirmation_id)
    except ConfirmationError:
        bot.forget_prompt(confirmation_id)
        return
    if row.state in ("pending", "expired"):
        await close_message(message, confirmation_id, "*This confirmation expired.*")
    bot.forget_prompt(confirmation_id)
