"""`/images draw` on Discord: an admin's picture arrives as an image file in the channel;
a member without the capability is told what to ask for; a spent budget says so."""

from __future__ import annotations

import pytest
from discord_world import world
from simcord.backend.errors import SetupError

from gigi_core.testing.fake_providers import FakeOpenAI, png_bytes


def _said(result) -> str:
    return result.followups[-1].content if result.followups else result.response.content


async def _setup(w, fake: FakeOpenAI) -> None:
    owner = f"guild:{w.gid}"
    await w.kernel.llm.add_credential(
        owner, "openai", "img", "sk-images-0123456789", base_url=fake.base_url
    )
    await w.kernel.llm.set_profile(owner, "image", "img", "gpt-image-1")
    await w.kernel.enable_plugin(w.gid, "images")


async def test_an_admin_draws_and_the_picture_is_a_file_in_the_channel(tmp_path) -> None:
    async with FakeOpenAI() as fake, world(tmp_path, plugins=["openai", "images"]) as w:
        await _setup(w, fake)
        picture = png_bytes(6, 6)
        fake.reply_image(picture)
        await w.admin.slash(w.channel, "images draw", prompt="a lighthouse")
        [posted] = [m for m in w.bot_messages() if m.attachments]
        [file] = posted.attachments
        assert file.filename == "picture-1.png"
        assert await file.read() == picture
        assert fake.requests_to("images")[0].json["prompt"] == "a lighthouse"


async def test_a_member_without_the_capability_does_not_see_the_command(tmp_path) -> None:
    """admins by default: Discord hides `/images` from members (the kernel's refusal of a
    call without the capability is tested in gigi-images)."""
    async with FakeOpenAI() as fake, world(tmp_path, plugins=["openai", "images"]) as w:
        await _setup(w, fake)
        with pytest.raises(SetupError, match="not visible to this user"):
            await w.member.slash(w.channel, "images draw", prompt="a lighthouse")
        assert fake.requests == []


async def test_a_spent_image_budget_is_named(tmp_path) -> None:
    async with FakeOpenAI() as fake, world(tmp_path, plugins=["openai", "images"]) as w:
        await _setup(w, fake)
        await w.kernel.llm.set_budget(w.gid, "guild", None, limit=100, exempt_admins=False)
        said = _said(await w.admin.slash(w.channel, "images draw", prompt="a lighthouse"))
        assert "budget of 100 tokens" in said, said
        assert fake.requests == []


async def test_a_picture_the_model_asks_for_keeps_its_prompt_out_of_the_store(
    tmp_path, database_url
) -> None:
    """The model calls images.generate during an admin's mention: the picture is posted as
    a file, and the prompt it wrote is in no table (trace, journal, usage, audit)."""
    from gigi_core.evalharness.canary import Canaries, scan_database
    from gigi_core.testing import wire_name
    from gigi_core.testing.fake_providers import FakeToolCall

    canaries = Canaries()
    prompt = f"a lighthouse named {canaries.new('picture prompt')}"
    async with (
        FakeOpenAI() as fake,
        world(tmp_path, plugins=["openai", "images"], database_url=database_url) as w,
    ):
        await _setup(w, fake)
        await w.kernel.llm.set_profile(f"guild:{w.gid}", "chat", "img", "gpt-4o")
        picture = png_bytes(5, 5)
        fake.reply_image(picture)
        fake.reply_tool_calls(FakeToolCall(wire_name("images.generate"), {"prompt": prompt}))
        fake.reply_text("Drawn.")
        await w.mention(w.admin, "draw a lighthouse")
        [posted] = [m for m in w.bot_messages() if m.attachments]
        assert await posted.attachments[0].read() == picture
        assert fake.requests_to("images")[0].json["prompt"] == prompt
        assert await scan_database(w.kernel.db.engine, canaries) == []
