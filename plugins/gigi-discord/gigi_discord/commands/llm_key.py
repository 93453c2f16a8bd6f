"""`/llm key add|list|test|prefer|remove|disclose` for a member's OWN key, and
`/llm policy personal-keys` for admins.

A member needs no capability for their own keys (owner ``user:<their id>``), in a server or
in a DM with Gigi; whether a key is *used* in a server is that server's policy, which
admins with ``llm.provider.write`` set. The key is typed into a modal only, never a chat
message or a slash option. Before a member's key first carries this server's context
(memory, knowledge, channel history) to their provider, they confirm once with a button.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

import discord
from discord import app_commands

from gigi_core import GigiError
from gigi_discord.commands.common import choices, context, listing
from gigi_discord.commands.credential_modal import CredentialModal
from gigi_discord.errors import Refusal, sentence, tell
from gigi_discord.identity import guild_key

log = logging.getLogger(__name__)
#: Leaves any member may use; ``commands/llm.py`` checks no capability for these.
MEMBER_LEAVES = frozenset(
    {"llm key add", "llm key list", "llm key test", "llm key prefer", "llm key remove"}
    | {"llm key disclose"}
)
DISCLOSE_TEMPLATE = r"gigi:d:(?P<uid>[0-9]{1,20}):(?P<gid>[0-9]{1,20})"


def _uid(interaction: discord.Interaction[Any]) -> str:
    return str(interaction.user.id)


async def _my_labels(interaction: discord.Interaction[Any], current: str) -> list[Any]:
    bot: Any = interaction.client
    views = await bot.kernel.llm.personal.keys(_uid(interaction))
    return choices([v.credential.label for v in views], current)


async def _providers(interaction: discord.Interaction[Any], current: str) -> list[Any]:
    bot: Any = interaction.client
    return choices(sorted(bot.kernel.registry.providers), current)


class PersonalKeyModal(CredentialModal):
    """The same private form as a server key's; the key is sealed as ``user:<member>``."""

    def __init__(self, provider: str, label: str, base_url: str | None, model: str | None):
        super().__init__(provider, label, base_url)
        self.title = "Add your own API key"
        self.model = model

    async def on_submit(self, interaction: discord.Interaction[Any]) -> None:
        secret = self.key.value.strip()
        self.key.default = None
        self.key._value = None  # type: ignore[assignment]  # nothing of the key stays here
        bot: Any = interaction.client
        try:
            cred = await bot.kernel.llm.personal.add(
                _uid(interaction),
                self.provider,
                self.label,
                secret,
                base_url=self.base_url,
                model=self.model,
                from_member=True,
            )
        except GigiError as exc:
            message = str(exc)
            if secret and secret in message:  # never echo the key
                message = message.replace(secret, "<key>")
            await tell(interaction, sentence(message))
            return
        finally:
            del secret
        then = (
            f"It answers for you with {self.model} where a server allows personal keys."
            if self.model
            else f"Next, choose its model with `/llm key prefer label:{cred.label}`."
        )
        await tell(
            interaction,
            f"Saved your key **{cred.label}** for {cred.provider} (fingerprint …"
            f"{cred.fingerprint_suffix}). {then}",
        )


class DisclosureButton(discord.ui.DynamicItem[discord.ui.Button[Any]], template=DISCLOSE_TEMPLATE):
    """``gigi:d:<member>:<guild>``: that member confirms, once for that server, that its
    context may be sent to their own provider. Nobody else can press it for them."""

    def __init__(self, user_id: str, guild_id: str) -> None:
        super().__init__(
            discord.ui.Button(
                label="Send this server's context to my provider",
                style=discord.ButtonStyle.primary,
                custom_id=f"gigi:d:{user_id}:{guild_id}",
            )
        )
        self.user_id = user_id
        self.guild_id = guild_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction[Any], item: discord.ui.Item[Any], match: Any, /
    ) -> DisclosureButton:
        return cls(match["uid"], match["gid"])

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        if _uid(interaction) != self.user_id:
            await tell(interaction, "Only the member this is addressed to can confirm it.")
            return
        if interaction.guild is None or str(interaction.guild.id) != self.guild_id:
            await tell(interaction, "Confirm this in the server it names.")
            return
        bot: Any = interaction.client
        new = await bot.kernel.llm.personal.acknowledge(self.guild_id, self.user_id)
        await tell(
            interaction,
            "Confirmed: answers billed to your key here now include this server's context."
            if new
            else "You had already confirmed this for this server.",
        )


def disclosure_view(user_id: str, guild_id: str) -> discord.ui.View:
    view = discord.ui.View(timeout=None)
    view.add_item(DisclosureButton(user_id, guild_id))
    return view


def key_group() -> app_commands.Group:
    group = app_commands.Group(name="key", description="Your own API keys (you pay for them).")

    @group.command(name="add", description="Add your own API key (typed into a private form).")
    @app_commands.describe(
        provider="Which provider the key is for",
        label="A name to refer to this key",
        model="The model it should answer with (you can set it later with prefer)",
        base_url="Only for compatible endpoints: the API base URL",
    )
    @app_commands.autocomplete(provider=_providers)
    async def add(
        interaction: discord.Interaction[Any],
        provider: str,
        label: app_commands.Range[str, 1, 64],
        model: app_commands.Range[str, 1, 200] | None = None,
        base_url: str | None = None,
    ) -> None:
        ctx = await context(interaction)
        chosen = ctx.kernel.llm.provider(provider)
        if chosen.requires_base_url and not base_url:
            raise Refusal(f"{provider} needs the `base_url` option (the API's base URL).")
        ctx.kernel.sealer.require_key()
        await ctx.kernel.llm.personal.check_member_url(base_url)  # before the key is typed
        mine = await ctx.kernel.llm.personal.keys(_uid(interaction))
        if any(v.credential.label == label for v in mine):
            raise Refusal(
                f"You already have a key labelled **{label}**; pick another label or remove "
                "that one first with `/llm key remove`."
            )
        await interaction.response.send_modal(PersonalKeyModal(provider, label, base_url, model))

    @group.command(name="list", description="Your keys (never the keys themselves).")
    async def list_(interaction: discord.Interaction[Any]) -> None:
        bot: Any = interaction.client
        lines = []
        for v in await bot.kernel.llm.personal.keys(_uid(interaction)):
            c = v.credential
            used = ", answers for you" if v.preferred_for else ""
            tested = f", last test {c.last_test_status}" if c.last_test_status else ""
            lines.append(
                f"**{c.label}** — {c.provider}, fingerprint …{c.fingerprint_suffix}, "
                f"{c.status}{tested}{used}"
            )
        await tell(interaction, listing(lines, "You have no keys yet: `/llm key add`."))

    @group.command(name="test", description="Make one tiny call with your key.")
    @app_commands.describe(model="A model id (default: the model your key answers with)")
    @app_commands.autocomplete(label=_my_labels)
    async def test(
        interaction: discord.Interaction[Any], label: str, model: str | None = None
    ) -> None:
        bot: Any = interaction.client
        await interaction.response.defer(ephemeral=True, thinking=True)
        result = await bot.kernel.llm.personal.test(_uid(interaction), label, model=model)
        if result.ok:
            text = f"**{label}** works with {result.model} ({result.latency_ms:.0f} ms)."
        else:
            text = f"**{label}** failed with {result.model} ({result.error_class}): " + sentence(
                result.message or "no details"
            )
        await tell(interaction, text)

    @group.command(name="prefer", description="Which of your keys and models answers for you.")
    @app_commands.describe(label="Your key's label", model="The provider's model id")
    @app_commands.autocomplete(label=_my_labels)
    async def prefer(
        interaction: discord.Interaction[Any],
        label: str,
        model: app_commands.Range[str, 1, 200],
    ) -> None:
        bot: Any = interaction.client
        await bot.kernel.llm.personal.prefer(_uid(interaction), label, model)
        await tell(
            interaction,
            f"Your key **{label}** now answers for you with {model}, where a server allows "
            "personal keys and in your DMs with Gigi.",
        )

    @group.command(name="remove", description="Destroy one of your keys.")
    @app_commands.autocomplete(label=_my_labels)
    async def remove(interaction: discord.Interaction[Any], label: str) -> None:
        bot: Any = interaction.client
        purposes = await bot.kernel.llm.personal.remove(_uid(interaction), label)
        text = f"Removed your key **{label}**; the sealed key is destroyed."
        if purposes:
            text += " Pick another with `/llm key prefer`, or the server's models answer you."
        await tell(interaction, text)

    @group.command(
        name="disclose", description="What your key would send from this server; confirm it."
    )
    async def disclose(interaction: discord.Interaction[Any]) -> None:
        if interaction.guild is None:
            raise Refusal("Use this in the server whose context you want to include.")
        bot: Any = interaction.client
        uid, gid = _uid(interaction), guild_key(interaction.guild, interaction.user)
        if await bot.kernel.llm.personal.acknowledged(gid, uid):
            await tell(interaction, "You already confirmed this for this server.")
            return
        preferred = await bot.kernel.llm.personal.preferred(uid)
        await interaction.response.send_message(
            bot.kernel.llm.personal.disclosure(preferred.provider if preferred else None),
            view=disclosure_view(uid, gid),
            ephemeral=True,
        )

    return group


def policy_group() -> app_commands.Group:
    group = app_commands.Group(name="policy", description="This server's LLM policy.")

    @group.command(name="personal-keys", description="May members' own keys answer here?")
    @app_commands.describe(
        value="off: never; dm-only: in DMs only; guild-allowed: also in this server"
    )
    async def personal_keys(
        interaction: discord.Interaction[Any],
        value: Literal["off", "dm-only", "guild-allowed"],
    ) -> None:
        ctx = await context(interaction)
        policy = await ctx.kernel.llm.set_policy(ctx.guild_id, personal_keys=value, by=ctx.actor.id)
        said = {
            "off": "Members' own keys are not used here; the server's models answer.",
            "dm-only": "Members' own keys are used only in DMs, never in this server.",
            "guild-allowed": "Members may have their own keys answer them here "
            "(`/llm key add`, then `/ask billing:me`).",
        }[policy.personal_keys]
        await tell(interaction, f"Personal keys: **{policy.personal_keys}**. {said}")

    return group
