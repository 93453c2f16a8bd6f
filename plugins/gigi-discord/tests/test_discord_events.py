"""Gateway events reach observing plugins as kernel events: messages, edits, deletes
(also uncached and bulk), channels, members and guilds; paused channels and DMs."""

from __future__ import annotations

import discord
from discord_watch_plugin import DmWatch, Watch
from discord_world import world
from gigi_discord.settings import DiscordSettings

from gigi_core.events import (
    ChannelDeleted,
    GuildJoined,
    GuildLeft,
    MemberLeft,
    MessageCreated,
    MessageDeleted,
    MessageEdited,
)
from gigi_core.testing.scripted import say

CONTENT = DiscordSettings(message_content=True)


async def _watching(w, watch: Watch) -> None:
    await w.kernel.enable_plugin(w.gid, "watch")


async def _settled(w) -> None:
    await w.env.settle()
    await w.kernel.events.drain()


def _recording(w) -> list:
    """Every event the bot hands to ``kernel.publish`` (delivered or not)."""
    seen: list = []
    original = w.kernel.publish

    async def publish(event):
        seen.append(event)
        await original(event)

    w.kernel.publish = publish
    return seen


async def test_message_created_carries_ids_flags_mentions_and_attachment_metadata(
    tmp_path,
) -> None:
    watch = Watch(tmp_path)
    async with world(tmp_path, [say("Hello!")], settings=CONTENT, extra=[("watch", watch)]) as w:
        await _watching(w, watch)
        mods = w.guild.roles["Mods"]
        first = await w.admin.send(w.channel, "the plan")
        await w.member.send(
            w.channel,
            f"<@{w.admin.id}> <@&{mods.id}> see this",
            reply_to=first,
            attachments=[("plan.txt", b"secret bytes")],
        )
        await w.mention(w.member, "hi")
        await _settled(w)

        created = watch.of(MessageCreated)
        assert [e.author_id for e in created] == [
            str(w.admin.id),
            str(w.member.id),
            str(w.member.id),
            str(w.bot.user.id),
        ]
        plan, reply, mention, answer = created
        assert plan.text == "the plan" and not plan.mentions_bot and plan.reply_to_id is None
        assert (plan.guild_id, plan.channel_id, plan.channel_kind) == (
            w.gid,
            str(w.channel.id),
            "text",
        )
        assert plan.parent_channel_id is None and plan.created_at.tzinfo is not None
        # The name the member writes under here (memory's search finds them by it).
        assert mention.author_name == w.member.name  # no nickname set: the account name
        assert reply.reply_to_id == str(first.id)
        assert str(w.admin.id) in reply.mentioned_user_ids
        assert reply.mentioned_role_ids == (str(mods.id),)
        [attachment] = reply.attachments
        assert (attachment.filename, attachment.size) == ("plan.txt", len(b"secret bytes"))
        assert not hasattr(attachment, "content")
        assert mention.mentions_bot and str(w.bot.user.id) in mention.mentioned_user_ids
        assert answer.author_is_bot and not answer.mentions_bot and answer.text == "Hello!"
        assert not answer.author_is_webhook


async def test_webhooks_bots_and_channel_kinds(tmp_path) -> None:
    watch = Watch(tmp_path)
    async with world(tmp_path, [], settings=CONTENT, extra=[("watch", watch)]) as w:
        await _watching(w, watch)
        hook = w.guild.create_webhook(w.channel, "Deploys")
        await hook.send("deployed")
        robot = w.guild.add_member(w.env.create_user("robot", bot=True))
        await robot.send(w.channel, "beep")
        voice = w.guild.create_voice_channel("Lounge")
        await w.member.send(voice, "in voice chat")
        forum = w.guild.create_forum_channel("ideas")
        created = await w.bot.get_channel(forum.id).create_thread(name="Idea", content="starter")
        await w.env.settle()
        [post] = forum.threads
        assert post.id == created.thread.id
        await w.member.send(post, "first post")
        thread = await w.bot.get_channel(w.channel.id).create_thread(
            name="side", type=discord.ChannelType.public_thread
        )
        private = await w.bot.get_channel(w.channel.id).create_thread(
            name="hush", type=discord.ChannelType.private_thread
        )
        await thread.send("in a thread")
        await private.send("in private")
        await _settled(w)

        by_text = {e.text: e for e in watch.of(MessageCreated)}
        assert by_text["deployed"].author_is_webhook
        assert by_text["beep"].author_is_bot and not by_text["beep"].author_is_webhook
        assert by_text["in voice chat"].channel_kind == "voice_text"
        assert by_text["first post"].channel_kind == "forum_post"
        assert by_text["first post"].parent_channel_id == str(forum.id)
        assert by_text["first post"].channel_id == str(post.id)
        assert by_text["in a thread"].channel_kind == "thread"
        assert by_text["in a thread"].parent_channel_id == str(w.channel.id)
        assert by_text["in private"].channel_kind == "private_thread"


async def test_without_message_content_only_addressed_text_is_known(tmp_path) -> None:
    watch = Watch(tmp_path)
    async with world(tmp_path, [say("ok")], extra=[("watch", watch)]) as w:
        await _watching(w, watch)
        chatter = await w.member.send(w.channel, "just chatting")
        await w.mention(w.member, "hello bot")
        await w.member.edit(chatter, "edited chatter")  # Discord blanks it: not published
        await _settled(w)
        texts = [e.text for e in watch.of(MessageCreated)]
        assert texts[0] == "" and texts[1].endswith("hello bot")
        assert watch.of(MessageEdited) == []


async def test_edits_and_deletes_also_of_uncached_messages_and_bulk(tmp_path) -> None:
    watch = Watch(tmp_path)
    async with world(tmp_path, [], settings=CONTENT, extra=[("watch", watch)]) as w:
        await _watching(w, watch)
        cached = await w.member.send(w.channel, "v1")
        # Sent while the bot was not listening (before a restart): never in its cache.
        backend = w.env.backend
        old = backend.create_message(w.channel.id, w.member.id, "old", broadcast=False)
        assert w.bot._connection._get_message(old.id) is None
        await w.member.edit(cached, f"v2 for <@{w.member.id}>")
        await w.member.edit(w.channel.history()[-1], "old, edited")
        await _settled(w)
        edits = {e.message_id: e for e in watch.of(MessageEdited)}
        assert edits[str(cached.id)].text == f"v2 for <@{w.member.id}>"
        # the payload's mentions: whom the new text mentions (memory replaces its rows)
        assert edits[str(cached.id)].mentioned_user_ids == (str(w.member.id),)
        assert edits[str(old.id)].text == "old, edited"
        assert edits[str(old.id)].mentioned_user_ids == ()
        assert edits[str(old.id)].channel_id == str(w.channel.id)
        assert edits[str(old.id)].guild_id == w.gid and edits[str(old.id)].edited_at

        await w.member.delete(cached)
        await w.member.delete(w.channel.history()[-1])
        batch = [backend.create_message(w.channel.id, w.member.id, f"m{i}") for i in range(3)]
        await w.env.settle()
        backend.bulk_delete_messages(w.channel.id, [m.id for m in batch])
        await _settled(w)
        deletes = watch.of(MessageDeleted)
        assert [d.message_ids for d in deletes] == [
            (str(cached.id),),
            (str(old.id),),
            tuple(sorted(str(m.id) for m in batch)),
        ]
        assert all(d.guild_id == w.gid and d.channel_id == str(w.channel.id) for d in deletes)


async def test_channel_thread_member_and_guild_lifecycle(tmp_path) -> None:
    watch = Watch(tmp_path)
    settings = DiscordSettings(members=True)
    async with world(tmp_path, [], settings=settings, extra=[("watch", watch)]) as w:
        assert w.bot.intents.members
        await _watching(w, watch)
        seen = _recording(w)
        doomed = w.guild.create_text_channel("doomed")
        thread = await w.bot.get_channel(w.channel.id).create_thread(
            name="t", type=discord.ChannelType.public_thread
        )
        await w.env.settle()
        w.env.backend.delete_channel(thread.id)
        w.env.backend.delete_channel(doomed.id)
        w.guild.remove_member(w.member)
        await _settled(w)
        gone = {e.channel_id for e in watch.of(ChannelDeleted)}
        assert gone == {str(doomed.id), str(thread.id)}
        [left] = watch.of(MemberLeft)
        assert (left.guild_id, left.user_id) == (w.gid, str(w.member.id))

        # SimCord marks every GUILD_CREATE "unavailable": false, which discord.py reads as
        # "available again"; a guild the bot was just added to comes without the field.
        from simcord.backend import serializers

        other = w.env.create_guild(name="Second")
        joined = dict(
            serializers.guild_create_payload(w.env.backend, w.env.backend.guilds[other.id])
        )
        joined.pop("unavailable")
        w.env.backend.emit("GUILD_CREATE", joined)
        await w.env.settle()
        await w.bot.get_guild(w.guild.id).leave()
        await _settled(w)
        assert GuildJoined(guild_id=str(other.id)) in seen
        assert GuildLeft(guild_id=w.gid) in seen
        assert watch.of(GuildLeft) == [GuildLeft(guild_id=w.gid)]


async def test_member_left_needs_the_opt_in_members_intent(tmp_path) -> None:
    watch = Watch(tmp_path)
    async with world(tmp_path, [], extra=[("watch", watch)]) as w:
        assert not w.bot.intents.members
        await _watching(w, watch)
        w.guild.remove_member(w.member)
        await _settled(w)
        assert watch.of(MemberLeft) == []


async def test_paused_channel_delivers_nothing_but_mentions_are_answered(tmp_path) -> None:
    watch = Watch(tmp_path)
    turns = [say("Still here."), say("Back.")]
    async with world(tmp_path, turns, settings=CONTENT, extra=[("watch", watch)]) as w:
        await _watching(w, watch)
        paused = await w.admin.slash(w.channel, "gigi channel pause")
        assert paused.ephemeral and paused.response.content.startswith("Paused:")
        await w.member.send(w.channel, "private talk")
        [answer] = await w.mention(w.member, "are you there?")
        assert answer.content == "Still here."
        await _settled(w)
        assert watch.of(MessageCreated) == []

        await w.admin.slash(w.channel, "gigi channel resume")
        await w.kernel.events.drain()
        await w.member.send(w.channel, "public talk")
        await _settled(w)
        assert [e.text for e in watch.of(MessageCreated)] == ["public talk"]


async def test_dms_reach_only_plugins_that_ask_for_them(tmp_path) -> None:
    watch, dms = Watch(tmp_path), DmWatch(tmp_path)
    extra = [("watch", watch), ("dmwatch", dms)]
    async with world(tmp_path, [say("Hi in private.")], extra=extra) as w:
        await _watching(w, watch)
        await w.member.send_dm("hello there")
        await _settled(w)
        assert watch.of(MessageCreated) == []
        mine, answer = dms.of(MessageCreated)
        assert (mine.guild_id, mine.channel_kind, mine.text) == (None, "dm", "hello there")
        assert mine.mentions_bot and answer.author_is_bot


async def test_a_failing_publish_never_stops_the_answer(tmp_path) -> None:
    async with world(tmp_path, [say("Answered anyway.")]) as w:

        async def broken(event):
            raise RuntimeError("the event bus is down")

        w.kernel.publish = broken
        [answer] = await w.mention(w.member, "hi")
        assert answer.content == "Answered anyway."
