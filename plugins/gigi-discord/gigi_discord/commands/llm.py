"""`/llm provider|credential|profile|usage|budget`: this server's own keys and models.

Everything here acts for the owner ``guild:<this server>``: a guild admin can never see,
use or change another server's or the operator's credentials from Discord.

Each command is decided by the policy engine on the capability it names (``NEEDS``):
``llm.provider.write`` adds and revokes keys, ``llm.provider.select`` chooses models,
``llm.provider.test`` tests keys, ``llm.usage.read`` shows usage and budgets (which
``llm.provider.write`` sets, resets and removes); listings need any of the first three.
Guild admins (Manage Server) hold them all; a grant gives a member exactly one.
`/llm key ...` is every member's own (``commands/llm_key.py``): it needs no capability and
works in DMs too, so `/llm` is shown to everyone; each other leaf refuses without its
capability when invoked, and only works in a server.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import discord
from discord import app_commands

from gigi_discord.commands.common import choices, context, listing, require_capability
from gigi_discord.commands.credential_modal import CredentialModal
from gigi_discord.commands.llm_budget import budget_group
from gigi_discord.commands.llm_key import MEMBER_LEAVES, key_group, policy_group
from gigi_discord.commands.llm_models import NEEDS as MODEL_NEEDS
from gigi_discord.commands.llm_models import failover_group, models_command
from gigi_discord.commands.llm_policy import PLACE_NEEDS, add_place_commands
from gigi_discord.errors import Refusal, sentence, tell

WRITE, SELECT, TEST = "llm.provider.write", "llm.provider.select", "llm.provider.test"
ANY = (WRITE, SELECT, TEST)  # reading providers, key labels and profiles
NEEDS: dict[str, tuple[str, ...]] = {
    "llm provider list": ANY,
    "llm credential add": (WRITE,),
    "llm credential list": ANY,
    "llm credential revoke": (WRITE,),
    "llm credential test": (TEST,),
    "llm profile set": (SELECT,),
    "llm profile list": ANY,
    "llm usage": ("llm.usage.read",),
    "llm budget set": (WRITE,),
    "llm budget show": ("llm.usage.read",),
    "llm budget reset": (WRITE,),
    "llm budget remove": (WRITE,),
    "llm policy personal-keys": (WRITE,),
    **dict.fromkeys(MEMBER_LEAVES, ()),  # a member's own keys: no capability
    **MODEL_NEEDS,  # /llm models, /llm failover set|show|clear
    **PLACE_NEEDS,  # /llm policy channel|role|show
}


def _owner(guild_id: str) -> str:
    return f"guild:{guild_id}"


def _check(capabilities: tuple[str, ...]) -> Any:
    async def check(interaction: discord.Interaction[Any], *_: Any) -> bool:
        await require_capability(interaction, *capabilities)
        return True

    return check


_LISTING = _check(ANY)  # one object: the autocompletes are shared by commands and bots


def guard(root: app_commands.Group) -> app_commands.Group:
    """Every leaf checks its capability when invoked, and every autocomplete checks any of
    ``ANY`` (discord.py runs no command checks for those); a leaf missing from ``NEEDS``
    is a bug, refused loudly at start-up rather than left unchecked."""
    for command in root.walk_commands():
        if isinstance(command, app_commands.Command):
            needs = NEEDS[command.qualified_name]
            if not needs:  # the member's own keys: their autocompletes list only theirs
                continue
            command.add_check(_check(needs))
            for param in command._params.values():
                complete = param.autocomplete
                if complete is not None and _LISTING not in getattr(
                    complete, "__discord_app_commands_checks__", []
                ):
                    app_commands.check(_LISTING)(complete)
    return root


async def _providers(interaction: discord.Interaction[Any], current: str) -> list[Any]:
    bot: Any = interaction.client
    return choices(sorted(bot.kernel.registry.providers), current)


async def _labels(interaction: discord.Interaction[Any], current: str) -> list[Any]:
    ctx = await context(interaction)
    creds = await ctx.kernel.llm.list_credentials(_owner(ctx.guild_id))
    return choices([c.label for c in creds], current)


def provider_group() -> app_commands.Group:
    group = app_commands.Group(name="provider", description="LLM providers Gigi can use.")

    @group.command(name="list", description="Providers installed on this Gigi.")
    async def list_(interaction: discord.Interaction[Any]) -> None:
        ctx = await context(interaction)
        lines = []
        for p in ctx.kernel.llm.describe_providers():
            can = [k for k, v in (p.get("supports") or {}).items() if v is True]
            extra = f" ({', '.join(can)})" if can else ""
            lines.append(f"**{p['name']}**{extra}: {p.get('description') or ''}".rstrip(": "))
        await tell(interaction, listing(lines, "No LLM provider plugin is installed."))

    return group


def credential_group() -> app_commands.Group:
    group = app_commands.Group(name="credential", description="This server's API keys.")

    @group.command(name="add", description="Add an API key (typed into a private form).")
    @app_commands.describe(
        provider="Which provider the key is for",
        label="A name to refer to this key",
        base_url="Only for compatible endpoints: the API base URL",
    )
    @app_commands.autocomplete(provider=_providers)
    async def add(
        interaction: discord.Interaction[Any],
        provider: str,
        label: app_commands.Range[str, 1, 64],
        base_url: str | None = None,
    ) -> None:
        # Everything that can fail without the key fails here, before anyone types it.
        ctx = await context(interaction)
        chosen = ctx.kernel.llm.provider(provider)
        if chosen.requires_base_url and not base_url:
            raise Refusal(f"{provider} needs the `base_url` option (the API's base URL).")
        ctx.kernel.sealer.require_key()
        if base_url:  # a server's key must not point at the machine Gigi runs on either
            await ctx.kernel.llm.personal.check_member_url(base_url)
        existing = await ctx.kernel.llm.list_credentials(_owner(ctx.guild_id))
        if any(c.label == label for c in existing):
            raise Refusal(
                f"This server already has a key labelled **{label}**; pick another label "
                "or revoke that one first."
            )
        await interaction.response.send_modal(CredentialModal(provider, label, base_url))

    @group.command(name="list", description="This server's keys (never the keys themselves).")
    async def list_(interaction: discord.Interaction[Any]) -> None:
        ctx = await context(interaction)
        lines = []
        for c in await ctx.kernel.llm.list_credentials(_owner(ctx.guild_id)):
            tested = f", last test {c.last_test_status}" if c.last_test_status else ""
            lines.append(
                f"**{c.label}** — {c.provider}, fingerprint …{c.fingerprint_suffix}, "
                f"{c.status}{tested}"
            )
        await tell(
            interaction, listing(lines, "This server has no keys yet: `/llm credential add`.")
        )

    @group.command(name="revoke", description="Destroy a key; profiles using it stop working.")
    @app_commands.autocomplete(label=_labels)
    async def revoke(interaction: discord.Interaction[Any], label: str) -> None:
        ctx = await context(interaction)
        purposes = await ctx.kernel.llm.revoke_credential(
            _owner(ctx.guild_id), label, by=ctx.actor.id
        )
        text = f"Revoked **{label}**; the sealed key is destroyed."
        if purposes:
            text += f" These purposes now have no working model: {', '.join(purposes)}."
        await tell(interaction, text)

    @group.command(name="test", description="Make one tiny call with a key.")
    @app_commands.describe(model="A model id (default: the model of a profile using the key)")
    @app_commands.autocomplete(label=_labels)
    async def test(
        interaction: discord.Interaction[Any], label: str, model: str | None = None
    ) -> None:
        ctx = await context(interaction)
        await interaction.response.defer(ephemeral=True, thinking=True)
        result = await ctx.kernel.llm.test_credential(
            _owner(ctx.guild_id), label, model=model, by=ctx.actor.id
        )
        if result.ok:
            text = f"**{label}** works with {result.model} ({result.latency_ms:.0f} ms)."
        else:
            text = f"**{label}** failed with {result.model} ({result.error_class}): " + sentence(
                result.message or "no details"
            )
        await tell(interaction, text)

    return group


def profile_group() -> app_commands.Group:
    group = app_commands.Group(name="profile", description="Which model does what here.")

    @group.command(name="set", description="Use a key and a model for a purpose.")
    @app_commands.describe(
        purpose="What the model is used for",
        credential="The key's label",
        model="The provider's model id",
        fallback_model="A second model on the same key, tried when the first fails",
        budget_fallback_model="A cheaper model on the same key, used once a budget is spent",
        input_price="Price per million input tokens (for money budgets)",
        output_price="Price per million output tokens (for money budgets)",
        currency="The prices' currency code (USD unless given)",
    )
    @app_commands.autocomplete(credential=_labels)
    async def set_(
        interaction: discord.Interaction[Any],
        purpose: Literal[
            "chat",
            "reasoning",
            "embedding",
            "routing",
            "classify",
            "extract",
            "summarise",
            "query_analyse",
            "respond",
            "complex",
            "vision",
            "image",
        ],
        credential: str,
        model: app_commands.Range[str, 1, 200],
        fallback_model: str | None = None,
        budget_fallback_model: str | None = None,
        input_price: app_commands.Range[float, 0] | None = None,
        output_price: app_commands.Range[float, 0] | None = None,
        currency: app_commands.Range[str, 3, 8] | None = None,
    ) -> None:
        ctx = await context(interaction)
        profile = await ctx.kernel.llm.set_profile(
            _owner(ctx.guild_id),
            purpose,
            credential,
            model,
            fallback_model=fallback_model,
            by=ctx.actor.id,
            budget_fallback_model=budget_fallback_model,
            input_price=input_price,
            output_price=output_price,
            currency=currency,
        )
        extra = f", falling back to {profile.fallback_model}" if profile.fallback_model else ""
        if profile.budget_fallback_model:
            extra += f", {profile.budget_fallback_model} once a budget is spent"
        if profile.input_price is not None:
            extra += (
                f", priced {profile.input_price:g} / {profile.output_price:g} "
                f"{profile.currency} per million input / output tokens"
            )
        warning = await ctx.kernel.llm.model_warning(
            _owner(ctx.guild_id), credential, model, see=f"`/llm models provider:{credential}`"
        )
        await tell(
            interaction,
            f"{purpose} now uses {profile.model}{extra} through **{profile.credential_label}** "
            f"({profile.provider})." + (f"\nWarning: {warning}" if warning else ""),
        )

    @group.command(name="list", description="This server's model choices.")
    async def list_(interaction: discord.Interaction[Any]) -> None:
        ctx = await context(interaction)
        lines = [
            f"**{p.purpose}**: {p.model} via {p.credential_label} ({p.provider})"
            + ("" if p.enabled else ", disabled")
            for p in await ctx.kernel.llm.list_profiles(_owner(ctx.guild_id))
        ]
        await tell(interaction, listing(lines, "No models chosen yet: `/llm profile set`."))

    return group


def llm_root() -> app_commands.Group:
    root = app_commands.Group(
        name="llm",
        description="Language models and keys: this server's, and your own.",
    )
    root.add_command(provider_group())
    root.add_command(credential_group())
    root.add_command(profile_group())
    root.add_command(budget_group())
    root.add_command(key_group())
    root.add_command(policy_group())
    root.add_command(models_command())
    root.add_command(failover_group())
    add_place_commands(root)  # /llm policy channel|role|show

    @root.command(name="usage", description="Model calls and tokens used by this server.")
    @app_commands.describe(days="How many days back (default 30)")
    async def usage(
        interaction: discord.Interaction[Any], days: app_commands.Range[int, 1, 365] = 30
    ) -> None:
        ctx = await context(interaction)
        since = datetime.now(UTC) - timedelta(days=days)
        rows = await ctx.kernel.llm.usage(ctx.guild_id, since)
        lines = [
            f"{r.provider} {r.model} ({r.purpose}, {r.status}): {r.calls} calls, "
            f"{r.input_tokens:,} in / {r.output_tokens:,} out tokens"
            for r in rows
        ]
        await tell(interaction, listing(lines, f"No model calls in the last {days} days."))

    return guard(root)
