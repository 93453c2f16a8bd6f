"""The modal that takes an API key: never pre-filled, never echoed, never logged.

Discord has no password field, so the key is only ever typed into this modal. The
acknowledgement shows the label and the last characters of the key's *fingerprint* (a
keyed hash), never any part of the key. Errors are described without the submitted value.
"""

from __future__ import annotations

import logging
from typing import Any

import discord

from gigi_core import GigiError
from gigi_discord.commands.common import context, require_capability
from gigi_discord.errors import Refusal, sentence, tell

log = logging.getLogger(__name__)


class CredentialModal(discord.ui.Modal):
    """Title and field label only; the typed value goes straight to ``kernel.llm``."""

    def __init__(self, provider: str, label: str, base_url: str | None) -> None:
        super().__init__(title="Add an API key", timeout=600)
        self.provider = provider
        self.label = label
        self.base_url = base_url
        self.key: discord.ui.TextInput[Any] = discord.ui.TextInput(
            label=f"{provider} API key"[:45],
            custom_id="gigi:llm:key",
            style=discord.TextStyle.short,
            placeholder="Paste the key; it is sealed and never shown again",
            required=True,
            min_length=8,
            max_length=400,
        )
        self.add_item(self.key)

    async def on_submit(self, interaction: discord.Interaction[Any]) -> None:
        secret = self.key.value.strip()
        self.key.default = None
        self.key._value = None  # type: ignore[assignment]  # nothing of the key stays here
        try:  # the form may have stayed open while the person lost the capability
            await require_capability(interaction, "llm.provider.write")
        except Refusal as refusal:
            await tell(interaction, refusal.message)
            return
        ctx = await context(interaction)
        try:
            cred = await ctx.kernel.llm.add_credential(
                f"guild:{ctx.guild_id}",
                self.provider,
                self.label,
                secret,
                base_url=self.base_url,
                by=ctx.actor.id,
                checked_url=True,  # a guild admin, not the operator: base URL stays public
            )
        except GigiError as exc:
            message = str(exc)
            if secret and secret in message:  # belt and braces: never echo the key
                message = message.replace(secret, "<key>")
            await tell(interaction, sentence(message))
            return
        finally:
            del secret
        await tell(
            interaction,
            f"Saved the key **{cred.label}** for {cred.provider} (fingerprint …"
            f"{cred.fingerprint_suffix}). Next, choose a model with `/llm profile set`.",
        )

    async def on_error(self, interaction: discord.Interaction[Any], error: Exception) -> None:
        """Log the error type only: a traceback of this modal could carry the key."""
        log.error("adding a credential failed: %s", type(error).__name__)
        await tell(interaction, "Gigi could not store that key; nothing was saved.")
