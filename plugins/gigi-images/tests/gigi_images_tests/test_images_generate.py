"""images.generate: drawn by the guild's image profile, posted as files, budgeted, recorded
in usage, the prompt never stored; refusals name what to change."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from gigi_core import ConfigError, GigiError, PolicyDenied, ToolExecutionError
from gigi_core.evalharness.canary import Canaries, scan_database
from gigi_core.testing.fake_providers import FakeGemini, FakeOpenAI, png_bytes
from gigi_images_tests.images_world import GUILD, MEMBER, open_world


async def test_an_admin_gets_the_picture_as_a_file_and_usage_without_the_prompt(
    tmp_path, database_url
) -> None:
    picture = png_bytes(8, 8)
    canaries = Canaries()
    prompt = f"a grey cat named {canaries.new('prompt')}"
    async with (
        FakeOpenAI() as fake,
        open_world(
            tmp_path, database_url, provider="openai", base_url=fake.base_url, model="gpt-image-1"
        ) as w,
    ):
        fake.reply_image(picture)
        outcome = await w.draw(prompt=prompt)
        assert outcome.result["status"] == "posted"
        assert outcome.result["pictures"] == [
            {
                "name": "picture-1.png",
                "media_type": "image/png",
                "size": len(picture),
                "width": 8,
                "height": 8,
            }
        ]
        [post] = w.poster.posts
        [file] = post.files
        assert (file.name, file.data, file.content_type) == ("picture-1.png", picture, "image/png")
        assert post.text == "Here is the picture you asked for."
        assert fake.requests_to("images")[0].json["prompt"] == prompt
        async with w.kernel.db.engine.connect() as conn:
            rows = (
                await conn.execute(
                    text(
                        "SELECT provider, model, purpose, status, output_tokens FROM llm_usage_events"
                    )
                )
            ).all()
        assert [tuple(r) for r in rows] == [("openai", "gpt-image-1", "image", "ok", 272)]
        assert await scan_database(w.kernel.db.engine, canaries) == []


async def test_a_member_without_the_capability_is_refused(tmp_path) -> None:
    async with (
        FakeOpenAI() as fake,
        open_world(
            tmp_path, None, provider="openai", base_url=fake.base_url, model="gpt-image-1"
        ) as w,
    ):
        with pytest.raises(PolicyDenied) as err:
            await w.draw(actor=MEMBER)
        assert "images.generate" in str(err.value)
        assert fake.requests == [] and w.poster.posts == []


async def test_a_spent_image_budget_refuses_before_the_provider_is_called(
    tmp_path, database_url
) -> None:
    async with (
        FakeOpenAI() as fake,
        open_world(
            tmp_path, database_url, provider="openai", base_url=fake.base_url, model="gpt-image-1"
        ) as w,
    ):
        await w.kernel.llm.set_budget(GUILD, "guild", None, limit=1000, exempt_admins=False)
        with pytest.raises(ToolExecutionError, match="daily budget of 1000 tokens is smaller"):
            await w.draw()
        assert fake.requests_to("images") == [] and w.poster.posts == []

        # room for one picture (held at 6,244 tokens, settled at the 281 it cost), not two
        await w.kernel.llm.set_budget(GUILD, "guild", None, limit=6500, exempt_admins=False)
        await w.draw()
        with pytest.raises(ToolExecutionError, match="daily budget of 6500 tokens") as err:
            await w.draw()
        assert len(fake.requests_to("images")) == 1 and len(w.poster.posts) == 1
        assert "gigi llm budget set" in (err.value.hint or "") or "budget" in str(err.value)


async def test_a_url_instead_of_bytes_posts_nothing(tmp_path) -> None:
    async with (
        FakeOpenAI() as fake,
        open_world(
            tmp_path, None, provider="openai", base_url=fake.base_url, model="dall-e-3"
        ) as w,
    ):
        fake.reply_image_url()
        with pytest.raises(ToolExecutionError, match="link instead of the picture"):
            await w.draw()
        assert w.poster.posts == []


async def test_a_broken_picture_posts_nothing(tmp_path) -> None:
    async with (
        FakeGemini() as fake,
        open_world(
            tmp_path,
            None,
            provider="gemini",
            base_url=fake.base_url,
            model="gemini-2.5-flash-image",
        ) as w,
    ):
        fake.reply_image(b"\x89PNG\r\n\x1a\n\x00broken")
        with pytest.raises(ToolExecutionError, match="header is broken"):
            await w.draw()
        assert w.poster.posts == []


async def test_gemini_image_models_draw_too(tmp_path) -> None:
    async with (
        FakeGemini() as fake,
        open_world(
            tmp_path,
            None,
            provider="gemini",
            base_url=fake.base_url,
            model="gemini-2.5-flash-image",
        ) as w,
    ):
        fake.reply_image(png_bytes(2, 3), png_bytes(3, 2))
        outcome = await w.draw(count=2)
        assert [p["width"] for p in outcome.result["pictures"]] == [2, 3]
        assert w.poster.posts[0].text == "Here are the 2 pictures you asked for."


async def test_a_provider_that_cannot_draw_is_refused_for_the_image_purpose(tmp_path) -> None:
    async with (
        FakeOpenAI() as fake,
        open_world(
            tmp_path,
            None,
            provider="openai",
            base_url=fake.base_url,
            model="gpt-image-1",
            plugins=("anthropic",),
        ) as w,
    ):
        await w.kernel.llm.add_credential(
            f"guild:{GUILD}", "anthropic", "claude", "sk-ant-0123456789"
        )
        with pytest.raises(ConfigError, match="cannot draw pictures") as err:
            await w.kernel.llm.set_profile(f"guild:{GUILD}", "image", "claude", "claude-x")
        assert "openai or gemini" in (err.value.hint or "")
        assert isinstance(err.value, GigiError)
