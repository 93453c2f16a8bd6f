"""images.generate: drawn by the guild's image profile, posted as files, budgeted, recorded
in usage, the prompt never stored; refusals name what to change."""

from __future__ import annotations

import asyncio
import io
import pathlib

import pytest
from sqlalchemy import text

from gigi_core import ConfigError, GigiError, PolicyDenied, ToolExecutionError
from gigi_core.default_plugins.console import ConsoleSurface
from gigi_core.evalharness.canary import Canaries, scan_database
from gigi_core.testing import open_test_kernel
from gigi_core.testing.fake_providers import FakeGemini, FakeOpenAI, Reply, png_bytes
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


async def test_a_member_without_the_capability_is_refused(tmp_path, database_url) -> None:
    async with (
        FakeOpenAI() as fake,
        open_world(
            tmp_path, database_url, provider="openai", base_url=fake.base_url, model="gpt-image-1"
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
        assert "gigi llm budget set|reset --guild g1" in (err.value.hint or "")


async def test_a_url_instead_of_bytes_posts_nothing(tmp_path, database_url) -> None:
    async with (
        FakeOpenAI() as fake,
        open_world(
            tmp_path, database_url, provider="openai", base_url=fake.base_url, model="dall-e-3"
        ) as w,
    ):
        fake.reply_image_url()
        with pytest.raises(ToolExecutionError, match="link instead of the picture"):
            await w.draw()
        assert w.poster.posts == []


def _gemini(tmp_path, database_url, fake: FakeGemini):
    return open_world(
        tmp_path,
        database_url,
        provider="gemini",
        base_url=fake.base_url,
        model="gemini-2.5-flash-image",
    )


async def test_a_broken_picture_posts_nothing(tmp_path, database_url) -> None:
    async with FakeGemini() as fake, _gemini(tmp_path, database_url, fake) as w:
        fake.reply_image(b"\x89PNG\r\n\x1a\n\x00broken")
        with pytest.raises(ToolExecutionError, match="header is broken"):
            await w.draw()
        assert w.poster.posts == []


async def test_a_gemini_link_instead_of_bytes_is_never_fetched(tmp_path, database_url) -> None:
    async with FakeGemini() as fake, _gemini(tmp_path, database_url, fake) as w:
        link = {"fileData": {"mimeType": "image/png", "fileUri": "https://files.example/cat.png"}}
        fake.enqueue(Reply(200, {"candidates": [{"content": {"parts": [link]}}]}))
        with pytest.raises(ToolExecutionError, match="link instead of the picture"):
            await w.draw()
        assert w.poster.posts == [] and len(fake.requests) == 1  # nothing went to the link


async def test_gemini_image_models_draw_too(tmp_path, database_url) -> None:
    canaries = Canaries()
    prompt = f"two foxes named {canaries.new('prompt')}"
    async with FakeGemini() as fake, _gemini(tmp_path, database_url, fake) as w:
        fake.reply_image(png_bytes(2, 3), png_bytes(3, 2))
        outcome = await w.draw(prompt=prompt, count=2)
        assert [p["width"] for p in outcome.result["pictures"]] == [2, 3]
        [post] = w.poster.posts
        assert post.text == "Here are the 2 pictures you asked for."
        assert [f.data for f in post.files] == [png_bytes(2, 3), png_bytes(3, 2)]
        sent = fake.last_request
        assert sent.path.endswith("gemini-2.5-flash-image:generateContent")
        assert prompt in str(sent.json["contents"])
        async with w.kernel.db.engine.connect() as conn:
            rows = await conn.execute(
                text("SELECT provider, model, purpose, status FROM llm_usage_events")
            )
            used = [tuple(r) for r in rows]
        assert used == [("gemini", "gemini-2.5-flash-image", "image", "ok")]
        assert await scan_database(w.kernel.db.engine, canaries) == []


async def test_the_console_saves_the_picture_and_prints_its_path(
    tmp_path, database_url, monkeypatch
) -> None:
    monkeypatch.setenv("USER", "alice")  # the console's operator, an admin there
    async with (
        FakeOpenAI() as fake,
        open_test_kernel(tmp_path, plugins=["images", "openai"], database_url=database_url) as k,
    ):
        await k.enable_plugin("console", "images")
        await k.llm.add_credential(
            "guild:console", "openai", "main", "key-0123456789abcd", base_url=fake.base_url
        )
        await k.llm.set_profile("guild:console", "image", "main", "gpt-image-1")
        picture = png_bytes(9, 9)
        fake.reply_image(picture)
        out = io.StringIO()
        stdin = io.StringIO("/images draw prompt=lighthouse\n")
        await asyncio.wait_for(ConsoleSurface(k, stdin=stdin, stdout=out).run(), 30)
        [line] = [ln for ln in out.getvalue().splitlines() if "[file]" in ln]
        path = pathlib.Path(line.split("[file] ", 1)[1])
        assert path.parent == k.settings.home / "outbox"
        assert path.name.endswith("picture-1.png")
        assert await asyncio.to_thread(path.read_bytes) == picture
        assert fake.requests_to("images")[0].json["prompt"] == "lighthouse"


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


async def test_a_picture_asked_for_in_a_run_follows_the_runs_places(tmp_path, database_url) -> None:
    """The tool's model call carries the run's place chain (ToolContext.places): the image
    model a channel policy picks answers in that channel's threads too."""
    from gigi_core.llm import Place
    from gigi_core.surfaces import Request
    from gigi_core.testing import AgentRuntime, ScriptedModel
    from gigi_core.testing.scripted import call, say
    from gigi_images_tests.images_world import ADMIN, CHANNEL

    async with (
        FakeOpenAI() as fake,
        open_world(
            tmp_path, database_url, provider="openai", base_url=fake.base_url, model="gpt-image-1"
        ) as w,
    ):
        channel = Place("channel", CHANNEL)
        await w.kernel.llm.places.set_place(GUILD, channel, purpose="image", model="gpt-image-c1")
        fake.reply_image(png_bytes(8, 8))
        model = ScriptedModel([call(("images.generate", {"prompt": "a cat"})), say("done")])
        reply = await AgentRuntime(w.kernel, model=model).handle(
            Request(
                actor=ADMIN,
                guild_id=GUILD,
                channel_id="t1",
                kind="mention",
                text="draw a cat",
                places=(Place("thread", "t1"), channel),
                context="none",
            )
        )
        assert reply.status == "done"
        assert fake.requests_to("images")[0].json["model"] == "gpt-image-c1"
