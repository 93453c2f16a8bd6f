"""A deleted channel, category, forum or thread takes its LLM place policy with it
(``ChannelDeleted``, as surfaces publish it): that guild's row only, never the guild's own
defaults, and at once for this process's cached policy. Both backends."""

from __future__ import annotations

from sqlalchemy import select

from gigi_core.events import ChannelDeleted
from gigi_core.llm.channel_policy import Place
from gigi_core.store.llm_policy_tables import LlmPlacePolicy
from tests.llm.service_helpers import llm_kernel

GUILD = "g1"
CHANNEL, THREAD = Place("channel", "c1"), Place("thread", "t1")


async def _rows(kernel) -> set[tuple[str, str]]:
    async with kernel.db.session() as s:
        rows = (await s.scalars(select(LlmPlacePolicy))).all()
        return {(r.guild_id, r.place_id) for r in rows}


async def test_a_deleted_channel_loses_its_place_policy(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel:
        places = kernel.llm.places
        await places.set_place(GUILD, Place("guild", GUILD), answer="replies", by="boss")
        await places.set_place(GUILD, CHANNEL, prompt="Answer in French.", by="boss")
        await places.set_place(GUILD, THREAD, answer="mention", by="boss")
        await places.set_place("g2", CHANNEL, prompt="Answer in German.", by="boss")
        # the legacy #general, whose id is the guild's own
        await places.set_place(GUILD, Place("channel", GUILD), prompt="Be kind.", by="boss")
        before = await places.effective(GUILD, (CHANNEL,))  # cached from here on
        assert before.prompt.value == "Answer in French."

        await kernel.publish(ChannelDeleted(guild_id=GUILD, channel_id="c1"))  # as surfaces do

        assert await _rows(kernel) == {
            (GUILD, GUILD),
            (GUILD, "t1"),
            (GUILD, f"channel:{GUILD}"),
            ("g2", "c1"),
        }
        after = await places.effective(GUILD, (CHANNEL,))
        assert after.prompt.value is None and after.answer.where == "guild"

        await kernel.privacy.on_lifecycle(ChannelDeleted(guild_id=GUILD, channel_id=GUILD))
        assert await _rows(kernel) == {(GUILD, GUILD), (GUILD, "t1"), ("g2", "c1")}
        await kernel.privacy.on_lifecycle(ChannelDeleted(guild_id=GUILD, channel_id="t1"))
        assert await _rows(kernel) == {(GUILD, GUILD), ("g2", "c1")}
        # a channel without a policy, or a DM, changes nothing
        await kernel.privacy.on_lifecycle(ChannelDeleted(guild_id=GUILD, channel_id="c9"))
        await kernel.privacy.on_lifecycle(ChannelDeleted(guild_id=None, channel_id="c1"))
        assert await _rows(kernel) == {(GUILD, GUILD), ("g2", "c1")}
