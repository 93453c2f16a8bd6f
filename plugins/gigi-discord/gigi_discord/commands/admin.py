"""`/gigi plugins list|enable|disable|config` and `/gigi grants add|remove|list` (admins only)."""

from __future__ import annotations

import json
from typing import Any

import discord
from discord import app_commands

from gigi_discord.commands.common import AdminGroup, choices, context, listing
from gigi_discord.commands.plugin_review import add_review
from gigi_discord.errors import Refusal, tell


def _parse_json(raw: str | None, what: str) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise Refusal(f"The {what} is not valid JSON ({exc.msg}).") from None
    if not isinstance(value, dict):
        raise Refusal(f'The {what} must be a JSON object, like {{"key": "value"}}.')
    return value


async def _plugin_names(interaction: discord.Interaction[Any], current: str) -> list[Any]:
    bot: Any = interaction.client
    manifests = bot.kernel.registry.manifests
    return choices(sorted(n for n, m in manifests.items() if m.plugin.per_server), current)


async def _capabilities(interaction: discord.Interaction[Any], current: str) -> list[Any]:
    bot: Any = interaction.client
    return choices(sorted(bot.kernel.registry.capabilities), current)


def _subject(
    user: discord.Member | discord.User | None, role: discord.Role | None
) -> tuple[str, str, str]:
    if (user is None) == (role is None):
        raise Refusal("Give exactly one of `user` or `role`.")
    if user is not None:
        return "user", str(user.id), user.mention
    assert role is not None
    return "role", str(role.id), role.mention


async def _with_notice(ctx: Any, text: str) -> str:
    """The Message Content notice rides once per guild on an admin's plugin answer."""
    if len(text) > 1400:  # a long listing keeps the notice for a shorter answer
        return text
    note = await ctx.bot.content_notice.once(ctx.guild_id)
    return f"{text}\n\n{note}" if note else text


def plugins_group() -> app_commands.Group:
    group = app_commands.Group(name="plugins", description="Which plugins this server uses.")

    @group.command(name="list", description="Installed plugins and whether they are on here.")
    async def list_(interaction: discord.Interaction[Any]) -> None:
        ctx = await context(interaction)
        enabled = set(await ctx.kernel.plugin_state.enabled_plugins(ctx.guild_id))
        lines = []
        for name, manifest in sorted(ctx.kernel.registry.manifests.items()):
            if not manifest.plugin.per_server:  # the dashboard: nothing to turn on here
                continue
            mark = "on" if name in enabled else "off"
            lines.append(
                f"**{name}** {manifest.plugin.version} — {mark}: {manifest.plugin.description}"
            )
        for record in ctx.kernel.registry.records.values():
            if record.status == "failed":
                # The error can name the operator's paths or hosts: it stays in their log.
                lines.append(f"**{record.name}** failed to load (details in the operator's log)")
        text = listing(lines, "No plugins with actions are installed.")
        if waiting := await ctx.kernel.reviews.pending(ctx.guild_id):
            names = ", ".join(f"**{p.plugin}** {p.version}" for p in waiting)
            text += f"\nUpgrades waiting for your review: {names} (`/gigi plugins review`)."
        await tell(interaction, await _with_notice(ctx, text))

    @group.command(name="enable", description="Turn a plugin on in this server.")
    @app_commands.describe(
        plugin="The plugin",
        config="Optional settings as a JSON object",
        allow_external="Allow its actions that reach outside Discord",
    )
    @app_commands.autocomplete(plugin=_plugin_names)
    async def enable(
        interaction: discord.Interaction[Any],
        plugin: str,
        config: str | None = None,
        allow_external: bool | None = None,
    ) -> None:
        ctx = await context(interaction)
        await ctx.kernel.enable_plugin(
            ctx.guild_id,
            plugin,
            config=_parse_json(config, "config"),
            allow_external=allow_external,
            by=ctx.actor.id,
        )
        await tell(interaction, await _with_notice(ctx, f"Enabled **{plugin}** in this server."))

    @group.command(name="disable", description="Turn a plugin off here (its settings are kept).")
    @app_commands.describe(plugin="The plugin")
    @app_commands.autocomplete(plugin=_plugin_names)
    async def disable(interaction: discord.Interaction[Any], plugin: str) -> None:
        ctx = await context(interaction)
        ctx.kernel.manifest(plugin)  # a readable error for unknown names
        if await ctx.kernel.disable_plugin(ctx.guild_id, plugin, by=ctx.actor.id):
            await tell(interaction, f"Disabled **{plugin}** in this server; its settings are kept.")
        else:
            await tell(interaction, f"**{plugin}** was not enabled here, so nothing changed.")

    @group.command(name="config", description="Show or replace a plugin's settings here.")
    @app_commands.describe(
        plugin="The plugin", replace="Replace the settings with this JSON object"
    )
    @app_commands.autocomplete(plugin=_plugin_names)
    async def config(
        interaction: discord.Interaction[Any], plugin: str, replace: str | None = None
    ) -> None:
        ctx = await context(interaction)
        ctx.kernel.manifest(plugin)
        new = _parse_json(replace, "setting")
        if new is not None:
            await ctx.kernel.configure_plugin(ctx.guild_id, plugin, new, by=ctx.actor.id)
        state = await ctx.kernel.plugin_state.get(ctx.guild_id, plugin)
        if state is None:
            raise Refusal(f"**{plugin}** has never been enabled or configured in this server.")
        shown = dict(state.config)
        shown.update({k: f"<sealed …{fp[-4:]}>" for k, fp in state.secret_fields.items()})
        head = f"**{plugin}** is {'enabled' if state.enabled else 'disabled'} here"
        head += ", external actions allowed." if state.allow_external else "."
        lines = [f"`{k}` = `{json.dumps(v, ensure_ascii=False)}`" for k, v in sorted(shown.items())]
        saved = "Saved. " if new is not None else ""
        await tell(interaction, saved + head + "\n" + listing(lines, "No settings."))

    add_review(group)  # /gigi plugins review (upgrades' held-back actions)
    return group


def grants_group() -> app_commands.Group:
    group = app_commands.Group(name="grants", description="Who may use which capability.")

    @group.command(name="add", description="Grant a capability to a member or a role.")
    @app_commands.describe(capability="A capability, or a wildcard like dice.*")
    @app_commands.autocomplete(capability=_capabilities)
    async def add(
        interaction: discord.Interaction[Any],
        capability: str,
        user: discord.Member | None = None,
        role: discord.Role | None = None,
    ) -> None:
        ctx = await context(interaction)
        kind, subject, shown = _subject(user, role)
        created = await ctx.kernel.add_grant(
            ctx.guild_id, capability, kind, subject, by=ctx.actor.id
        )
        verb = "Granted" if created else "Already granted:"
        await tell(interaction, f"{verb} `{capability}` to {shown}.")

    @group.command(name="remove", description="Take a capability back.")
    @app_commands.autocomplete(capability=_capabilities)
    async def remove(
        interaction: discord.Interaction[Any],
        capability: str,
        user: discord.Member | None = None,
        role: discord.Role | None = None,
    ) -> None:
        ctx = await context(interaction)
        kind, subject, shown = _subject(user, role)
        await ctx.kernel.remove_grant(ctx.guild_id, capability, kind, subject, by=ctx.actor.id)
        await tell(interaction, f"Removed `{capability}` from {shown}.")

    @group.command(name="list", description="Grants in this server.")
    async def list_(interaction: discord.Interaction[Any]) -> None:
        ctx = await context(interaction)
        rows = await ctx.kernel.grants.list(ctx.guild_id)
        lines = [
            f"`{g.capability}` → {'<@' if g.subject_type == 'user' else '<@&'}{g.subject_id}>"
            for g in rows
        ]
        await tell(interaction, listing(lines, "No grants yet; defaults from each plugin apply."))

    return group


def gigi_root() -> app_commands.Group:
    root = AdminGroup(
        name="gigi", description="Set up Gigi in this server (admins), and see your own data."
    )
    root.add_command(plugins_group())
    root.add_command(grants_group())
    return root.guard()
