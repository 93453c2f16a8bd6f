"""``kernel.llm.generate_images`` is held like a chat call: a role policy that allows none
of the image profile's model refuses before the provider is called, the run's billing
decides whose key draws (and so which budgets it spends), and its place chain picks a
place's image model and the channel budget a thread spends. Both backends; a fake OpenAI
on loopback."""

from __future__ import annotations

import pytest

from gigi_core import Actor
from gigi_core.llm import BudgetExhausted
from gigi_core.llm.channel_policy import Place, RoleNotAllowed
from gigi_core.testing.fake_providers import FakeOpenAI, png_bytes
from tests.llm.service_helpers import llm_kernel

GUILD = "g1"
GUEST = Actor(id="bob", roles=frozenset({"r-guest"}))
IN_THREAD = (Place("thread", "t1"), Place("channel", "c1"))


async def draw(kernel, actor: Actor = GUEST, **where):
    return await kernel.llm.generate_images("a grey cat", guild_id=GUILD, actor=actor, **where)


async def images_kernel(kernel, base_url: str) -> None:
    owner = f"guild:{GUILD}"
    await kernel.llm.add_credential(
        owner, "openai", "main", "key-0123456789abcd", base_url=base_url
    )
    await kernel.llm.set_profile(owner, "image", "main", "gpt-image-1")


async def test_a_role_policy_holds_for_pictures(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await images_kernel(kernel, fake.base_url)
        await kernel.llm.places.set_role(GUILD, "r-guest", ["gpt-4o-mini"])
        fake.reply_image(png_bytes(4, 4))
        with pytest.raises(RoleNotAllowed, match="gpt-image-1"):
            await draw(kernel)
        assert fake.requests == []
        # a role allowed the model draws; an admin is exempt as for chat
        await kernel.llm.places.set_role(GUILD, "r-guest", ["gpt-4o-mini", "gpt-image-1"])
        drawn = await draw(kernel)
        assert len(drawn.images) == 1
        await kernel.llm.places.set_role(GUILD, "r-guest", ["gpt-4o-mini"])
        fake.reply_image(png_bytes(4, 4))
        admin = Actor(id="ada", roles=GUEST.roles, is_admin=True)
        assert len((await draw(kernel, admin)).images) == 1


async def test_the_runs_places_pick_the_model_and_the_channel_budget(
    database_url, tmp_path
) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await images_kernel(kernel, fake.base_url)
        await kernel.llm.places.set_place(
            GUILD, Place("channel", "c1"), purpose="image", model="dall-e-3"
        )
        fake.reply_image(png_bytes(4, 4))
        await draw(kernel, channel_id="t1", places=IN_THREAD)
        assert fake.requests[-1].json["model"] == "dall-e-3"  # the thread's channel's model
        await kernel.llm.set_budget(GUILD, "channel", "c1", limit=1000)  # below one picture
        fake.reply_image(png_bytes(4, 4))
        with pytest.raises(BudgetExhausted, match="c1"):
            await draw(kernel, channel_id="t1", places=IN_THREAD)
        assert len(fake.requests) == 1


async def test_the_runs_billing_decides_whose_key_draws(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await images_kernel(kernel, fake.base_url)
        llm = kernel.llm
        await llm.set_policy(GUILD, personal_keys="guild-allowed")
        await llm.add_credential(
            "user:bob", "openai", "mine", "sk-user-0123456789", base_url=fake.base_url
        )
        await llm.set_profile("user:bob", "image", "mine", "gpt-image-1")
        await llm.set_budget(GUILD, "guild", None, limit=0)
        fake.reply_image(png_bytes(4, 4))
        await draw(kernel, Actor(id="bob"), billing="me")
        assert fake.requests[-1].headers["authorization"] == "Bearer sk-user-0123456789"
        with pytest.raises(BudgetExhausted):
            await draw(kernel, Actor(id="bob"), billing="server")
        assert len(fake.requests) == 1
