"""Errors after a public "thinking…" are private; provider and configuration detail is for
admins only (members get a short sentence); old confirmation buttons grey out at start-up."""

from __future__ import annotations

from discord_world import make_bot, world

from gigi_core.testing.fake_providers import FakeOpenAI
from gigi_core.testing.scripted import ScriptedModel, call

DETAIL = "Incorrect API key provided: sk-wron********1234. You can find your API key at example."
SHORT = "The language model did not answer"


async def _with_failing_provider(w, fake) -> None:
    owner = f"guild:{w.gid}"
    await w.kernel.llm.add_credential(
        owner, "openai-compatible", "main", "sk-wrong-key-1234", base_url=fake.base_url
    )
    await w.kernel.llm.set_profile(owner, "chat", "main", "fake-model")


def _public(w) -> list[str]:
    return [m.content for m in w.channel.history() if not m.flags.ephemeral]


async def test_a_provider_failure_after_a_public_ask_is_private(tmp_path) -> None:
    async with FakeOpenAI() as fake, world(tmp_path, plugins=["openai"]) as w:
        await _with_failing_provider(w, fake)
        fake.reply_error(401, DETAIL, times=2)
        member = await w.member.slash(w.channel, "ask", question="hello?")
        assert member.response is None  # the public "thinking…" is gone
        [said] = member.followups
        assert said.ephemeral and said.content.startswith(SHORT)
        assert "Incorrect API key" not in said.content and "sk-" not in said.content
        admin = await w.admin.slash(w.channel, "ask", question="hello?")
        [told] = admin.followups
        assert told.ephemeral and told.content.startswith(SHORT)
        assert DETAIL.split(":")[0] in told.content  # admins see what the provider said
        assert not any("Incorrect API key" in c or SHORT in c for c in _public(w))


async def test_a_provider_failure_in_a_mention_tells_members_a_short_sentence(tmp_path) -> None:
    async with FakeOpenAI() as fake, world(tmp_path, plugins=["openai"]) as w:
        await _with_failing_provider(w, fake)
        fake.reply_error(401, DETAIL, times=2)
        [reply] = await w.mention(w.member, "hello?")
        assert reply.content.startswith(SHORT) and "Incorrect API key" not in reply.content
        assert "/agent trace" not in reply.content
        [to_admin] = await w.mention(w.admin, "hello?")
        run_id = to_admin.content.split("run:")[1].split("`")[0]
        assert "Incorrect API key" not in to_admin.content  # a mention's reply is public
        assert "`/agent trace run:" in to_admin.content
        trace = await w.admin.slash(w.channel, "agent trace", run=run_id)
        assert trace.ephemeral and "Incorrect API key" in trace.response.content
        nosy = await w.member.slash(w.channel, "agent trace")  # the member's own failed run
        assert "Incorrect API key" not in nosy.response.content


async def test_an_error_after_a_public_defer_is_ephemeral(tmp_path) -> None:
    async with world(tmp_path, []) as w:
        result = await w.member.slash(w.channel, "agent call", action="notes.add", args="{}")
        assert result.response is None
        [said] = result.followups
        assert said.ephemeral and "invalid arguments for notes.add" in said.content.lower()
        assert not any("invalid arguments" in c.lower() for c in _public(w))
        fine = await w.member.slash(w.channel, "agent call", action="notes.count")
        assert not fine.ephemeral and fine.response.content == '`notes.count` → {"count": 3}'


def _buttons(message) -> list[dict]:
    return [c for row in message.components for c in row.to_dict()["components"]]


async def _fresh(w, message):
    return await w.bot.get_channel(message.channel.id).fetch_message(message.id)


ADD = ("notes.add", {"text": "d"})


async def test_buttons_of_a_run_decided_while_the_bot_was_down_grey_out_at_start_up(
    tmp_path,
) -> None:
    async with world(tmp_path, [call(ADD)]) as w:
        [prompt] = await w.mention(w.member, "add a note d")
        run_id = prompt.content.split("run `")[1].split("`")[0]
        await w.bot.close()
        from gigi_core import Actor

        await w.kernel.agent.cancel(run_id, Actor(id="operator", is_admin=True))
        await w.env.restart_bot(make_bot(w.kernel, ScriptedModel([])))
        w.bot = w.env.bot
        fresh = await _fresh(w, prompt)
        assert all(b.get("disabled") for b in _buttons(fresh))  # greyed out without a click
        assert "cancelled" in fresh.content


async def test_buttons_that_expire_after_a_restart_grey_out(tmp_path) -> None:
    async with world(tmp_path, [call(ADD)]) as w:
        [prompt] = await w.mention(w.member, "add a note d")
        await w.env.restart_bot(make_bot(w.kernel, ScriptedModel([])))
        w.bot = w.env.bot
        assert not any(b.get("disabled") for b in _buttons(await _fresh(w, prompt)))
        await w.env.advance_time(15 * 60 + 1)
        fresh = await _fresh(w, prompt)
        assert all(b.get("disabled") for b in _buttons(fresh))
        assert "This confirmation expired." in fresh.content
