"""The audience of a public answer is every member who can read its channel: a channel is
listed for it (``ctx.visible_channels()``, channel arguments) only if every one of them may
read that channel too, role and member overwrites included. Without a complete member list
(no members intent) only what provably every member may read is listed besides the answer's
own channel."""

from __future__ import annotations

from typing import Any

import discord
import pytest
from discord_world import world
from gigi_discord.settings import DiscordSettings
from simcord.backend.models import Overwrite
from simcord.enums import OverwriteType

from gigi_core.testing.scripted import call, say

HIDDEN = discord.PermissionOverwrite(view_channel=False)
READS = discord.PermissionOverwrite(view_channel=True, read_message_history=True)
BOT = discord.PermissionOverwrite(view_channel=True, send_messages=True, read_message_history=True)
MEMBERS = pytest.mark.parametrize("members", [False, True], ids=["no-members-intent", "members"])


def _settings(members: bool) -> DiscordSettings:
    return DiscordSettings(members=members)


async def _listed(w: Any, who: Any, channel: Any = None) -> frozenset[str]:
    """What a tool run for ``who``'s public mention in ``channel`` is given to read."""
    w.model.turns.extend([call(("notes.count", {})), say("3 notes")])
    await w.mention(who, "how many notes?", channel=channel)
    seen = w.notes.visible[-1]
    assert seen is not None
    return seen


@MEMBERS
async def test_a_channel_hidden_from_a_role_of_the_audience_is_not_listed(
    tmp_path, members
) -> None:
    async with world(tmp_path, [], settings=_settings(members)) as w:
        muted = w.guild.create_role("Muted")
        w.env.backend.add_member_role(w.guild.id, w.member.id, muted.id)
        lounge = w.guild.create_text_channel("lounge", overwrites={muted: HIDDEN})
        town = w.guild.create_text_channel("town")
        parent = w.bot.get_channel(lounge.id)
        await w.env.settle()
        thread = await parent.create_thread(name="t", type=discord.ChannelType.public_thread)
        await w.env.settle()
        seen = await _listed(w, w.admin)  # ada may read #lounge; bob (Muted) reads #general
        assert {str(w.channel.id), str(town.id)} <= seen
        assert str(lounge.id) not in seen and str(thread.id) not in seen
        # Named, it is refused for the same reason.
        w.model.turns.extend([call(("notes.peek", {"channel": str(lounge.id)})), say("no")])
        await w.mention(w.admin, "peek at lounge")
        assert "notes.peek" not in w.notes.ran
        assert "not everyone who will see this answer" in str(w.model.requests[-1].messages[-1])
        # Asked inside #lounge, bob is not in the audience: #lounge is listed.
        assert str(lounge.id) in await _listed(w, w.admin, lounge)
        # Muted loses Read Message History in #town too: seen at the next answer.
        w.env.backend.set_overwrite(
            town.id,
            Overwrite(
                target_id=muted.id,
                type=OverwriteType.ROLE,
                allow=0,
                deny=discord.Permissions(read_message_history=True).value,
            ),
        )
        await w.env.settle()
        assert str(town.id) not in await _listed(w, w.admin)


@MEMBERS
async def test_a_channel_hidden_from_one_member_of_the_audience_is_not_listed(
    tmp_path, members
) -> None:
    async with world(tmp_path, [], settings=_settings(members)) as w:
        no_view = w.guild.create_text_channel("no-view", overwrites={w.member: HIDDEN})
        no_history = w.guild.create_text_channel(
            "no-history",
            overwrites={w.member: discord.PermissionOverwrite(read_message_history=False)},
        )
        await w.env.settle()
        seen = await _listed(w, w.admin)
        assert str(w.channel.id) in seen
        assert str(no_view.id) not in seen and str(no_history.id) not in seen


@MEMBERS
async def test_a_staff_channel_is_listed_in_a_staff_channel_only_with_the_member_list(
    tmp_path, members
) -> None:
    """With every member known, #mods' readers all read #modlog; without, nobody can tell."""
    async with world(tmp_path, [], settings=_settings(members)) as w:
        mods = _role(w, "Mods")
        staff = {w.guild.default_role: HIDDEN, mods: READS, w.guild.me: BOT}
        mods_chat = w.guild.create_text_channel("mods", overwrites=staff)
        modlog = w.guild.create_text_channel("modlog", overwrites=staff)
        await w.env.settle()
        seen = await _listed(w, w.admin, mods_chat)
        assert {str(mods_chat.id), str(w.channel.id)} <= seen
        assert (str(modlog.id) in seen) is members
        assert str(modlog.id) not in await _listed(w, w.admin)  # in #general: bob reads it


async def test_one_member_overwrite_inside_the_audience_keeps_a_channel_out(tmp_path) -> None:
    async with world(tmp_path, [], settings=_settings(True)) as w:
        mods = _role(w, "Mods")
        cy = w.guild.add_member(w.env.create_user("cy"), roles=[mods])
        staff = {w.guild.default_role: HIDDEN, mods: READS, w.guild.me: BOT}
        mods_chat = w.guild.create_text_channel("mods", overwrites=staff)
        modlog = w.guild.create_text_channel("modlog", overwrites={**staff, cy: HIDDEN})
        await w.env.settle()
        assert str(modlog.id) not in await _listed(w, w.admin, mods_chat)


async def test_role_member_and_channel_changes_are_seen_at_once(tmp_path) -> None:
    """The per-channel cache is dropped by the gateway events that change the audience."""
    async with world(tmp_path, [], settings=_settings(True)) as w:
        mods = _role(w, "Mods")
        staff = {w.guild.default_role: HIDDEN, mods: READS, w.guild.me: BOT}
        mods_chat = w.guild.create_text_channel("mods", overwrites=staff)
        modlog = w.guild.create_text_channel("modlog", overwrites={**staff, w.member: HIDDEN})
        helpers = w.guild.create_role("Helpers")
        await w.env.settle()
        assert str(modlog.id) in await _listed(w, w.admin, mods_chat)
        # bob becomes a Mod: he reads #mods now, and may not read #modlog.
        w.env.backend.add_member_role(w.guild.id, w.member.id, mods.id)
        await w.env.settle()
        assert str(modlog.id) not in await _listed(w, w.admin, mods_chat)
        w.env.backend.remove_member_role(w.guild.id, w.member.id, mods.id)
        await w.env.settle()
        assert str(modlog.id) in await _listed(w, w.admin, mods_chat)
        # A channel update: Helpers (a role with one member, cy) may read #mods now.
        cy = w.guild.add_member(w.env.create_user("cy"), roles=[helpers])
        await w.env.settle()
        assert str(modlog.id) in await _listed(w, w.admin, mods_chat)
        w.env.backend.set_overwrite(
            mods_chat.id,
            Overwrite(
                target_id=helpers.id,
                type=OverwriteType.ROLE,
                allow=READS.pair()[0].value,
                deny=0,
            ),
        )
        await w.env.settle()
        assert str(modlog.id) not in await _listed(w, w.admin, mods_chat)
        # A role update: Helpers gain Administrator, so cy reads #modlog after all.
        w.env.backend.edit_role(
            w.guild.id, helpers.id, {"permissions": discord.Permissions(administrator=True).value}
        )
        await w.env.settle()
        assert str(modlog.id) in await _listed(w, w.admin, mods_chat)
        assert cy is not None


@pytest.mark.parametrize("budget", [1, 3], ids=["groups", "channels"])
async def test_past_the_budget_only_what_everyone_reads_is_listed(
    tmp_path, monkeypatch, budget
) -> None:
    """Huge guilds: the member-by-member part is bounded, and past the bound fails closed.
    Here 3 groups (ada's Mods, bob, the owner); 2 of them read #mods, so with a budget of 3
    #mods is checked (2) and #modlog (2 more) is past it."""
    from gigi_discord import audience as audience_module

    monkeypatch.setattr(audience_module, "BUDGET", budget)
    async with world(tmp_path, [], settings=_settings(True)) as w:
        mods = _role(w, "Mods")
        staff = {w.guild.default_role: HIDDEN, mods: READS, w.guild.me: BOT}
        mods_chat = w.guild.create_text_channel("mods", overwrites=staff)
        modlog = w.guild.create_text_channel("modlog", overwrites=staff)
        await w.env.settle()
        seen = await _listed(w, w.admin, mods_chat)
        assert {str(mods_chat.id), str(w.channel.id)} <= seen and str(modlog.id) not in seen


def _role(w: Any, name: str) -> Any:
    """The world's Mods role (ada holds it) or a new one."""
    for role in w.guild.roles.values():
        if role.name == name:
            return role
    return w.guild.create_role(name)
