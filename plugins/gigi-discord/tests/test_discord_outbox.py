"""``kernel.outbox`` on Discord: a plugin's post reaches the channel without pings, split at
Discord's limit, and its buttons run the plugin's commands as whoever presses them."""

from __future__ import annotations

import discord
import pytest
from conftest import make_bot, world
from discord_watch_plugin import Watch, WatchAdmin

from gigi_core.events import Button, OutboundMessage, PostForbidden


def _buttons(message) -> list[dict]:
    return [c for row in message.components for c in row.to_dict()["components"]]


def _text(result) -> str:
    return result.followups[-1].content if result.followups else result.response.content


async def _post(w, text: str, *buttons: Button, channel=None):
    message = OutboundMessage(w.gid, str((channel or w.channel).id), text, buttons=buttons)
    return await w.kernel.outbox.post(message, plugin="watch")


def _extra(tmp_path):
    watch = Watch(tmp_path)
    return watch, [("watch", watch), ("wadmin", WatchAdmin(tmp_path))]


async def test_a_post_reaches_the_channel_without_pinging_anyone(tmp_path) -> None:
    watch, extra = _extra(tmp_path)
    async with world(tmp_path, [], extra=extra) as w:
        await w.kernel.enable_plugin(w.gid, "watch")
        assert w.kernel.outbox.serves(w.gid)
        posted = await _post(w, f"<@{w.member.id}> @everyone is the release done?")
        [message] = w.bot_messages()
        assert str(message.id) == posted.message_id and posted.url == message.jump_url
        assert message.content.startswith(f"<@{w.member.id}> @everyone")
        [sent] = [r for r in w.env.http_requests if r.method == "POST" and "/messages" in r.path]
        assert sent.json["allowed_mentions"] == {"parse": []}


async def test_long_text_is_split_and_buttons_go_under_the_last_part(tmp_path) -> None:
    watch, extra = _extra(tmp_path)
    async with world(tmp_path, [], extra=extra) as w:
        await w.kernel.enable_plugin(w.gid, "watch")
        await _post(w, "word " * 500, Button("Count", "watch count", style="primary"))
        first, last = w.bot_messages()
        assert len(first.content) <= 2000 and not first.components
        [button] = _buttons(last)
        assert button["label"] == "Count" and button["custom_id"].startswith("gigi:b:")
        assert len(button["custom_id"]) <= 100


async def test_a_button_runs_the_command_as_the_presser_and_answers_them_alone(tmp_path) -> None:
    watch, extra = _extra(tmp_path)
    async with world(tmp_path, [], extra=extra) as w:
        await w.kernel.enable_plugin(w.gid, "watch")
        await _post(
            w,
            "Anything to do?",
            Button("Count", "watch count"),
            Button("Enable", "watch enable", {"channel": str(w.channel.id)}),
        )
        [message] = w.bot_messages()
        counted = await w.member.click(message, label="Count")
        assert counted.ephemeral and _text(counted).startswith('`watch.count` → {"count": ')
        refused = await w.member.click(message, label="Enable")  # watch.admin: admins only
        assert refused.ephemeral and "you do not hold watch.admin" in _text(refused)
        assert [c[0] for c in watch.calls] == ["watch.count"]
        enabled = await w.admin.click(message, label="Enable")
        assert enabled.ephemeral and [c[0] for c in watch.calls] == ["watch.count", "watch.enable"]


async def test_a_button_still_works_after_the_bot_restarts(tmp_path) -> None:
    watch, extra = _extra(tmp_path)
    async with world(tmp_path, [], extra=extra) as w:
        await w.kernel.enable_plugin(w.gid, "watch")
        await _post(w, "Count now?", Button("Count", "watch count"))
        [message] = w.bot_messages()
        await w.env.restart_bot(make_bot(w.kernel, None))
        w.bot = w.env.bot
        counted = await w.member.click(message, label="Count")
        assert _text(counted).startswith('`watch.count` → {"count": ')


async def test_a_button_of_a_plugin_since_disabled_does_nothing(tmp_path) -> None:
    watch, extra = _extra(tmp_path)
    async with world(tmp_path, [], extra=extra) as w:
        await w.kernel.enable_plugin(w.gid, "watch")
        await _post(w, "Count now?", Button("Count", "watch count"))
        [message] = w.bot_messages()
        await w.kernel.disable_plugin(w.gid, "watch")
        refused = await w.member.click(message, label="Count")
        assert refused.ephemeral and "not enabled in this server" in _text(refused)
        assert watch.calls == []


async def test_a_channel_the_bot_may_not_post_in_is_refused(tmp_path) -> None:
    watch, extra = _extra(tmp_path)
    async with world(tmp_path, [], extra=extra) as w:
        await w.kernel.enable_plugin(w.gid, "watch")
        quiet = w.guild.create_text_channel(
            "quiet", overwrites={w.guild.me: discord.PermissionOverwrite(send_messages=False)}
        )
        assert await w.kernel.outbox.can_post(w.gid, str(w.channel.id))
        assert not await w.kernel.outbox.can_post(w.gid, str(quiet.id))
        assert not await w.kernel.outbox.can_post(w.gid, "123")
        with pytest.raises(PostForbidden, match="may not post"):
            await _post(w, "hello", channel=quiet)
        assert w.bot_messages(quiet) == []


async def test_member_is_who_discord_says_with_what_they_may_read(tmp_path) -> None:
    watch, extra = _extra(tmp_path)
    async with world(tmp_path, [], extra=extra) as w:
        mods_only = w.guild.create_text_channel(
            "mods",
            overwrites={
                w.guild.default_role: discord.PermissionOverwrite(view_channel=False),
                w.admin: discord.PermissionOverwrite(view_channel=True),
                w.guild.me: discord.PermissionOverwrite(view_channel=True),
            },
        )
        general, mods = str(w.channel.id), str(mods_only.id)
        admin = await w.kernel.outbox.member(w.gid, str(w.admin.id))
        member = await w.kernel.outbox.member(w.gid, str(w.member.id))
        assert admin is not None and member is not None
        assert admin.actor.is_admin and admin.actor.roles == {str(w.guild.roles["Mods"].id)}
        assert not member.actor.is_admin and member.actor.id == str(w.member.id)
        assert await admin.channel_visible(mods) and not await member.channel_visible(mods)
        assert {general, mods} <= await admin.visible_channels()
        assert mods not in await member.visible_channels()
        # An answer shown in #general: only what everyone there may read is listed.
        shown = await w.kernel.outbox.member(w.gid, str(w.admin.id), shown_in=general)
        assert mods not in await shown.visible_channels()
        assert general in await shown.visible_channels()
        nowhere = await w.kernel.outbox.member(w.gid, str(w.admin.id), shown_in="404")
        assert await nowhere.visible_channels() == frozenset()
        assert await w.kernel.outbox.member(w.gid, "123456") is None
