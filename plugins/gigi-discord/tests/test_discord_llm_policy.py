"""`/llm policy channel|role|show` through SimCord, and the answer modes the surface honours:
`mention` (default) answers mentions only, `replies` also answers replies to Gigi without a
mention, inherited from a thread's channel and a channel's category (issue 30)."""

from __future__ import annotations

import discord
from discord_world import world
from gigi_discord.settings import DiscordSettings
from simcord.backend.models.message import AllowedMentions

from gigi_core.testing.fake_providers import FakeOpenAI
from gigi_core.testing.scripted import say


def _text(result) -> str:
    return result.followups[-1].content if result.followups else result.response.content


async def _reply_without_ping(w, who, to, text: str) -> None:
    """A reply with Discord's "@ mention" toggle off: Gigi is not in its mentions."""
    backend = w.env.backend
    ref = {"channel_id": str(w.channel.id), "message_id": str(to.id)}
    backend.create_message(
        w.channel.id,
        who.id,
        text,
        reference=backend.normalize_message_reference(w.channel.id, ref),
        allowed_mentions=AllowedMentions(replied_user=False),
    )
    await w.env.settle()


async def test_replies_are_answered_only_where_the_answer_mode_says(tmp_path) -> None:
    turns = [say("Friday."), say("Yes."), say("Sure."), say("Pinged.")]
    content = DiscordSettings(message_content=True)  # a reply without a ping has its text
    async with world(tmp_path, turns, settings=content) as w:
        [answer] = await w.mention(w.member, "when is the release?")
        before = len(w.bot_messages())
        await _reply_without_ping(w, w.member, answer, "are we sure?")
        assert len(w.bot_messages()) == before  # mention mode: left alone
        assert len(w.model.requests) == 1

        done = await w.admin.slash(w.channel, "llm policy channel", answer="replies")
        assert done.ephemeral and "answers replies" in _text(done)
        await _reply_without_ping(w, w.member, answer, "are we sure?")
        assert len(w.model.requests) == 2 and w.bot_messages()[-1].content == "Yes."
        # a mention is answered whatever the mode, and so is a reply that pings Gigi
        await w.mention(w.member, "thanks")
        await w.admin.slash(w.channel, "llm policy channel", clear="answer")
        await w.member.send(w.channel, "really?", reply_to=answer)
        assert len(w.model.requests) == 4 and w.bot_messages()[-1].content == "Pinged."


async def test_a_category_mode_and_prompt_reach_its_channels_threads(tmp_path) -> None:
    async with world(tmp_path, [say("one"), say("two")]) as w:
        category = w.guild.create_category("Support")
        help_ = w.guild.create_text_channel("help", category=category)
        await w.env.settle()
        set_ = await w.admin.slash(
            w.channel, "llm policy channel", where=category, prompt="Answer in French."
        )
        assert "instructions 17 characters" in _text(set_)
        thread = await w.bot.get_channel(help_.id).create_thread(
            name="ticket", type=discord.ChannelType.public_thread
        )
        await w.env.settle()
        [handle] = [t for t in help_.threads if t.id == thread.id]
        await w.mention(w.member, "bonjour?", channel=handle)
        system = [m.content for m in w.model.requests[0].messages if m.role == "system"]
        assert len(system) == 2 and "Answer in French." in system[1]
        shown = _text(await w.admin.slash(handle, "llm policy show"))
        assert f"**Instructions**: 17 characters — from category <#{category.id}>" in shown
        assert "**Answers**: mention — from built-in default" in shown
        # the server's general channel is outside the category: no instructions
        await w.mention(w.member, "hello?")
        assert [m.role for m in w.model.requests[1].messages].count("system") == 1


async def test_role_policy_and_show_need_their_capabilities(tmp_path) -> None:
    async with world(tmp_path) as w:
        guests = w.guild.create_role("Guests")
        done = await w.admin.slash(w.channel, "llm policy role", role=guests, allow="m-small, chat")
        assert f"<@&{guests.id}> may use: m-small, chat." in _text(done)
        await w.kernel.llm.set_budget(w.gid, "role", str(guests.id), limit=4000)
        shown = _text(await w.admin.slash(w.channel, "llm policy show"))
        assert f"<@&{guests.id}> may use: m-small, chat" in shown
        assert f"<@&{guests.id}> budget (daily): 0 of 4,000 tokens spent" in shown
        both = await w.admin.slash(w.channel, "llm policy role", role=guests)
        assert "either `allow`" in _text(both)
        every = await w.admin.slash(w.channel, "llm policy channel", answer="every")
        assert "only applies to ambient channels" in _text(every)
        assert "mention or replies" in _text(every)
        commands = await w.bot.tree.fetch_commands()
        [llm] = [c for c in commands if c.name == "llm"]
        w.guild.set_command_permissions(llm, {w.guild.default_role: True})
        refused = await w.member.slash(w.channel, "llm policy channel", answer="replies")
        assert refused.ephemeral and "llm.provider.select" in _text(refused)
        assert (await w.kernel.llm.places.effective(w.gid)).answer.where == "default"


async def test_a_forum_post_is_answered_with_its_forums_model(tmp_path) -> None:
    """The chain Discord hands over reaches resolution: the forum's model override serves
    its posts on the server's own key; the general channel keeps the server's profile."""
    async with FakeOpenAI() as fake, world(tmp_path, plugins=["openai"]) as w:
        owner = f"guild:{w.gid}"
        await w.kernel.llm.add_credential(
            owner, "openai-compatible", "main", "sk-policy-0123456789", base_url=fake.base_url
        )
        await w.kernel.llm.set_profile(owner, "chat", "main", "m-1")
        forum = w.guild.create_forum_channel("ideas")
        await w.env.settle()
        done = await w.admin.slash(
            w.channel, "llm policy channel", where=forum, purpose="chat", model="m-ideas"
        )
        assert "chat → model m-ideas" in _text(done)
        created = await w.bot.get_channel(forum.id).create_thread(name="Idea", content="starter")
        await w.env.settle()
        [post] = [t for t in forum.threads if t.id == created.thread.id]
        shown = _text(await w.admin.slash(post, "llm policy show"))
        assert f"**chat**: model m-ideas — from forum <#{forum.id}>" in shown
        fake.reply_text("noted", times=3)
        await w.mention(w.member, "an idea", channel=post)
        await w.mention(w.member, "elsewhere")
        await w.member.slash(post, "ask", question="and /ask?", context="none")
        models = [r.json["model"] for r in fake.requests_to("chat")]
        assert models == ["m-ideas", "m-1", "m-ideas"]


async def test_a_member_held_by_a_role_policy_reads_which_and_how_to_change_it(tmp_path) -> None:
    async with FakeOpenAI() as fake, world(tmp_path, plugins=["openai"]) as w:
        owner = f"guild:{w.gid}"
        await w.kernel.llm.add_credential(
            owner, "openai-compatible", "main", "sk-policy-0123456789", base_url=fake.base_url
        )
        await w.kernel.llm.set_profile(owner, "chat", "main", "m-1")
        guests = w.guild.create_role("Guests")
        guest = w.guild.add_member(w.env.create_user("gus"), roles=[guests])
        await w.admin.slash(w.channel, "llm policy role", role=guests, allow="m-small")
        [reply] = await w.mention(guest, "hello?")
        assert f"the role policy says role {guests.id} allows m-small" in reply.content
        assert "`/llm policy role role:<role> allow:m-small,m-1`" in reply.content
        assert fake.requests_to("chat") == []  # refused before the provider
        fake.reply_text("hi")
        [answer] = await w.mention(w.member, "hello?")  # no role policy: no limit
        assert answer.content == "hi"
