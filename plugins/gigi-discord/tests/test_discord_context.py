"""Context packs on Discord: `/ask context:memory` and mentions use the kernel's broker, the
answer's `[n]` labels become jump links, and replying to Gigi continues the conversation
(unchanged items are not sent again)."""

from __future__ import annotations

from dataclasses import replace

from discord_world import world
from gigi_discord.render import with_source_links

from gigi_core.retrieval import Citation
from gigi_core.surfaces import Reply
from gigi_core.testing import FakeRetriever, RetrieverPlugin
from gigi_core.testing.retrieval import hit
from gigi_core.testing.scripted import say

URL = "https://discord.com/channels/1/2/99"


def _kit(tmp_path):
    retriever = FakeRetriever("kb", capability="kb.read")
    return retriever, [("kb", RetrieverPlugin(tmp_path, retriever, plugin="kb"))]


def _hits(channel_id: str) -> list:
    return [
        replace(
            hit("kb:n:1", "release is on friday", channel_id),
            citation=Citation("#general · 2026-11-30", URL),
        ),
        hit("kb:n:2", "hidden plans", "424242"),  # a channel nobody here can see
    ]


async def test_ask_with_memory_context_cites_with_jump_links(tmp_path) -> None:
    retriever, extra = _kit(tmp_path)
    async with world(tmp_path, [say("Friday [1]; not [7].")], extra=extra) as w:
        retriever.hits = _hits(str(w.channel.id))
        await w.kernel.enable_plugin(w.gid, "kb")
        result = await w.member.slash(
            w.channel, "ask", question="When is the release?", context="memory"
        )
        turn = w.model.requests[0].messages[-1].content
        assert "release is on friday" in turn and "hidden plans" not in turn
        assert turn.endswith("## User's Question\nWhen is the release?")
        assert result.response.content == f"Friday [[1]](<{URL}>); not [7]."


async def test_ask_context_none_sends_only_the_question(tmp_path) -> None:
    retriever, extra = _kit(tmp_path)
    async with world(tmp_path, [say("ok")], extra=extra) as w:
        retriever.hits = _hits(str(w.channel.id))
        await w.kernel.enable_plugin(w.gid, "kb")
        await w.member.slash(w.channel, "ask", question="When?", context="none")
        assert w.model.requests[0].messages[-1].content == "When?" and retriever.calls == []


async def test_mentions_use_the_broker_and_replies_continue_the_conversation(tmp_path) -> None:
    retriever, extra = _kit(tmp_path)
    turns = [say("Friday [1]."), say("Yes, Friday."), say("Friday.")]
    async with world(tmp_path, turns, extra=extra) as w:
        retriever.hits = _hits(str(w.channel.id))
        await w.kernel.enable_plugin(w.gid, "kb")  # a retrieval path is on: context is auto
        [answer] = await w.mention(w.member, "when is the release?")
        first = w.model.requests[0].messages[-1].content
        assert "release is on friday" in first and "hidden plans" not in first
        assert f"[[1]](<{URL}>)" in answer.content
        await w.member.send(w.channel, f"<@{w.bot.user.id}> are we sure?", reply_to=answer)
        second = w.model.requests[1].messages[-1].content
        assert "unchanged: [1]" in second and "release is on friday" not in second
        await w.admin.send(w.channel, f"<@{w.bot.user.id}> are we sure?", reply_to=answer)
        third = w.model.requests[2].messages[-1].content
        assert "unchanged:" not in third  # another member's follow-up starts afresh
        assert "release is on friday" in third


def test_labels_without_a_url_stay_text() -> None:
    reply = Reply(text="See [1] and [2], not [x] or [3](already).", sources={"1": "https://a/b"})
    assert with_source_links(reply).text == (
        "See [[1]](<https://a/b>) and [2], not [x] or [3](already)."
    )
    assert with_source_links(Reply(text="[1]")).text == "[1]"


async def test_a_public_answer_never_quotes_a_channel_its_readers_cannot_see(tmp_path) -> None:
    """A moderator asking in #general gets nothing from #mods there; asking in #mods does."""
    import discord

    retriever, extra = _kit(tmp_path)
    turns = [say("From general."), say("From mods.")]
    async with world(tmp_path, turns, extra=extra) as w:
        mods = w.guild.create_text_channel(
            "mods",
            overwrites={
                w.guild.default_role: discord.PermissionOverwrite(view_channel=False),
                w.admin: discord.PermissionOverwrite(view_channel=True, read_message_history=True),
                w.guild.me: discord.PermissionOverwrite(
                    view_channel=True, send_messages=True, read_message_history=True
                ),
            },
        )
        await w.env.settle()
        retriever.hits = [
            hit("kb:n:1", "release is on friday", str(w.channel.id)),
            hit("kb:n:2", "ban the spammer quietly", str(mods.id)),
        ]
        await w.kernel.enable_plugin(w.gid, "kb")
        await w.mention(w.admin, "what is going on?")
        public = w.model.requests[0].messages[-1].content
        assert "release is on friday" in public and "ban the spammer" not in public
        await w.mention(w.admin, "what is going on?", channel=mods)
        private = w.model.requests[1].messages[-1].content
        assert "ban the spammer" in private and "release is on friday" in private
