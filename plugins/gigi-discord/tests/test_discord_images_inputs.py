"""Pictures in, the rest of the paths: a DM, the vision profile's own model, a picture too
large in pixels, a link outside Discord's CDN (never opened), and the canary scan on both
stores, over every table, the FTS index terms, every log record and a paused run's state."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from dataclasses import dataclass

import pytest
from discord_world import world
from gigi_discord.attachments import AttachmentRefused, ImageLimits, fetch
from sqlalchemy import inspect, text

from gigi_core import ConfigError
from gigi_core.evalharness.canary import Canaries, capture_logs, scan_database
from gigi_core.testing import wire_name
from gigi_core.testing.fake_providers import (
    FakeAnthropic,
    FakeGemini,
    FakeOpenAI,
    FakeOpenRouter,
    FakeToolCall,
    png_bytes,
)

SIM_CDN = "cdn.simcord.invalid"  # the simulator's CDN stands in for Discord's


async def _configure(w, fake: FakeOpenAI, owner: str | None = None, model: str = "gpt-4o"):
    owner = owner or f"guild:{w.gid}"
    await w.kernel.llm.add_credential(
        owner, "openai-compatible", "main", "sk-vision-0123456789", base_url=fake.base_url
    )
    await w.kernel.llm.set_profile(owner, "chat", "main", model)


def _picture_sent(body: dict) -> bytes:
    url = body["messages"][-1]["content"][-1]["image_url"]["url"]
    return base64.b64decode(url.partition(",")[2])


async def test_a_dm_with_a_picture_reaches_the_members_model(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GIGI_DISCORD_IMAGE_HOSTS", SIM_CDN)
    monkeypatch.setenv("GIGI_PERSONAL_KEY_LOCAL_URLS", "1")  # the fake listens on loopback
    picture = png_bytes(4, 2)
    async with FakeOpenAI() as fake, world(tmp_path, plugins=["openai"]) as w:
        await _configure(w, fake, owner=f"user:{w.member.id}")
        fake.reply_text("A wide grey picture.")
        # SimCord's send_dm takes attachment payloads: store the upload as a member's is
        backend = w.env.backend
        dm_id = backend.get_dm_channel(w.member.id).id
        stored = backend.store_attachments(dm_id, [("wide.png", picture)])
        await w.member.send_dm("", attachments=stored)
        dm = w.member.user.dm_channel
        [answer] = [m for m in dm.history() if m.author.id == w.bot.user.id]
        assert answer.content.startswith("A wide grey picture."), answer.content
        [sent] = fake.requests_to("chat")
        assert "What is in this picture?" in json.dumps(sent.json["messages"][-1]["content"][0])
        assert _picture_sent(sent.json) == picture


async def test_the_vision_profile_answers_pictures_and_chat_the_rest(
    tmp_path, monkeypatch, database_url
) -> None:
    monkeypatch.setenv("GIGI_DISCORD_IMAGE_HOSTS", SIM_CDN)
    async with (
        FakeOpenAI() as fake,
        world(tmp_path, plugins=["openai"], database_url=database_url) as w,
    ):
        await _configure(w, fake, model="gpt-3.5-turbo")
        fake.text_only_models = frozenset({"gpt-3.5-turbo"})
        await w.kernel.llm.set_profile(f"guild:{w.gid}", "vision", "main", "gpt-4o")
        fake.reply_text("A cat.")
        fake.reply_text("Hello.")
        await w.member.send(
            w.channel, f"<@{w.bot.user.id}> what?", attachments=[("c.png", png_bytes())]
        )
        await w.mention(w.member, "hi")
        assert [m.content.split("\n")[0] for m in w.bot_messages()] == ["A cat.", "Hello."]
        looked, chatted = fake.requests_to("chat")
        assert (looked.json["model"], chatted.json["model"]) == ("gpt-4o", "gpt-3.5-turbo")
        assert _picture_sent(looked.json) == png_bytes()
        async with w.kernel.db.engine.connect() as conn:
            rows = await conn.execute(
                text("SELECT model, purpose FROM llm_usage_events ORDER BY id")
            )
            used = [tuple(r) for r in rows]
        assert used == [("gpt-4o", "vision"), ("gpt-3.5-turbo", "chat")]


async def test_a_picture_over_8000_pixels_a_side_is_refused_before_any_call(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("GIGI_DISCORD_IMAGE_HOSTS", SIM_CDN)
    async with FakeOpenAI() as fake, world(tmp_path, plugins=["openai"]) as w:
        await _configure(w, fake)
        before = len(w.bot_messages())
        await w.member.send(
            w.channel, f"<@{w.bot.user.id}> hi", attachments=[("banner.png", png_bytes(9000, 10))]
        )
        [reply] = w.bot_messages()[before:]
        assert "banner.png is 9000x10 pixels; the limit is 8000 per side" in reply.content
        assert "scale it down" in reply.content
        assert fake.requests_to("chat") == []


async def test_an_attachment_outside_discords_cdn_is_never_downloaded(
    tmp_path, monkeypatch
) -> None:
    """SimCord serves attachments from its own host, which is not Discord's: with the default
    hosts it is refused unopened; with that host allowed the same upload is fetched."""
    monkeypatch.delenv("GIGI_DISCORD_IMAGE_HOSTS", raising=False)
    async with FakeOpenAI() as fake, world(tmp_path, plugins=["openai"]) as w:
        await _configure(w, fake)
        fetched: list[str] = []
        real = w.bot.http.get_from_cdn

        async def counting(url: str) -> bytes:
            fetched.append(url)
            return await real(url)

        w.bot.http.get_from_cdn = counting
        before = len(w.bot_messages())
        await w.member.send(
            w.channel, f"<@{w.bot.user.id}> hi", attachments=[("c.png", png_bytes())]
        )
        [reply] = w.bot_messages()[before:]
        assert "c.png is not stored on Discord's own servers, so I did not open it" in reply.content
        assert fetched == [] and fake.requests_to("chat") == []

        monkeypatch.setenv("GIGI_DISCORD_IMAGE_HOSTS", SIM_CDN)
        fake.reply_text("A grey square.")
        await w.member.send(
            w.channel, f"<@{w.bot.user.id}> hi", attachments=[("c.png", png_bytes())]
        )
        assert len(fetched) == 1 and len(fake.requests_to("chat")) == 1


def _needles(marker: bytes) -> list[bytes]:
    """The marker raw, hex and base64-encoded at each of the three byte alignments."""
    out = [marker, marker.hex().encode()]
    for shift in range(3):
        encoded = base64.b64encode(b"x" * shift + marker)
        out.append(encoded[4:-4])
    return out


async def _all_rows(engine) -> bytes:
    dumped = []
    async with engine.connect() as conn:
        tables = await conn.run_sync(lambda sync: inspect(sync).get_table_names())
        for table in tables:
            for row in await conn.execute(text(f'SELECT * FROM "{table}"')):
                for value in row:
                    if isinstance(value, bytes | bytearray | memoryview):
                        dumped.append(bytes(value))
                    else:
                        dumped.append(str(value).encode())
    return b"\n".join(dumped)


async def test_nothing_of_a_picture_is_stored_on_either_backend(
    tmp_path, monkeypatch, database_url
) -> None:
    """The run waits for a confirmation (so its state is stored), then finishes; the PNG's
    canary is looked for in the paused state, every table, the index terms and every log."""
    monkeypatch.setenv("GIGI_DISCORD_IMAGE_HOSTS", SIM_CDN)
    canaries = Canaries()
    marker = canaries.new("picture").encode()
    picture = png_bytes(6, 4, marker=marker)
    with capture_logs() as logs:
        logging.getLogger("gigi").debug("capture started")
        async with (
            FakeOpenAI() as fake,
            world(tmp_path, plugins=["openai"], database_url=database_url) as w,
        ):
            await _configure(w, fake)
            fake.reply_tool_calls(FakeToolCall(wire_name("notes.add"), {"text": "a cat"}))
            fake.reply_text("Added the note.")
            before = len(w.bot_messages())
            await w.member.send(
                w.channel, f"<@{w.bot.user.id}> note what this is", attachments=[("c.png", picture)]
            )
            [prompt] = w.bot_messages()[before:]
            assert "**Needs confirmation:**" in prompt.content, prompt.content
            assert _picture_sent(fake.requests_to("chat")[0].json) == picture

            run = await w.kernel.agent.runs.last(guild_id=w.gid)
            state, status = await w.kernel.agent.runs.load(run.id)
            assert status == "awaiting_confirmation"
            [meta] = state["request"]["images"]
            assert meta == {
                "id": meta["id"],
                "media_type": "image/png",
                "size": len(picture),
                "width": 6,
                "height": 4,
            }
            paused = json.dumps(state).encode()
            assert b"data:image" not in paused and b"image_url" not in paused
            assert all(n not in paused for n in _needles(marker))

            await w.admin.click(prompt, label="Confirm")
            assert w.notes.ran == ["notes.add"]
            assert any(m.content.startswith("Added the note.") for m in w.bot_messages())

            rows = await _all_rows(w.kernel.db.engine)
            assert len(rows) > 1000  # the scan read the store, not nothing
            for needle in _needles(marker):
                assert needle not in rows, needle
            assert await scan_database(w.kernel.db.engine, canaries) == []
    assert len(logs.records) > 10  # the capture saw the run's logging
    everything = "\n".join(t for _, t in logs.records).encode()
    for needle in _needles(marker):
        assert needle not in everything, needle
    assert logs.leaks(canaries) == []


async def test_the_per_message_limits_come_from_the_settings(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GIGI_DISCORD_IMAGE_HOSTS", SIM_CDN)
    monkeypatch.setenv("GIGI_DISCORD_IMAGE_MAX_COUNT", "1")
    monkeypatch.setenv("GIGI_DISCORD_IMAGE_MAX_MB", "0.001")  # about 1 KB
    async with FakeOpenAI() as fake, world(tmp_path, plugins=["openai"]) as w:
        await _configure(w, fake)
        fetched: list[str] = []
        real = w.bot.http.get_from_cdn

        async def counting(url: str) -> bytes:
            fetched.append(url)
            return await real(url)

        w.bot.http.get_from_cdn = counting
        two = [("a.png", png_bytes()), ("b.png", png_bytes())]
        await w.member.send(w.channel, f"<@{w.bot.user.id}> hi", attachments=two)
        big = [("big.png", png_bytes(64, 64) + b"\x00" * 2048)]
        await w.member.send(w.channel, f"<@{w.bot.user.id}> hi", attachments=big)
        count, size = w.bot_messages()
        assert "You attached 2 files; I read at most 1 pictures per message" in count.content
        assert "big.png is 0.0 MB; the limit is 0.0 MB per picture" in size.content
        assert fetched == [] and fake.requests_to("chat") == []  # refused before download

    monkeypatch.setenv("GIGI_DISCORD_IMAGE_MAX_MB", "ten")
    with pytest.raises(ConfigError, match="GIGI_DISCORD_IMAGE_MAX_MB must be a number, got 'ten'"):
        ImageLimits.from_env()


async def test_a_broken_picture_setting_is_answered_and_logged(
    tmp_path, monkeypatch, caplog
) -> None:
    monkeypatch.setenv("GIGI_DISCORD_IMAGE_HOSTS", SIM_CDN)
    monkeypatch.setenv("GIGI_DISCORD_IMAGE_MAX_MB", "ten")
    async with FakeOpenAI() as fake, world(tmp_path, plugins=["openai"]) as w:
        await _configure(w, fake)
        await w.member.send(
            w.channel, f"<@{w.bot.user.id}> hi", attachments=[("c.png", png_bytes())]
        )
        [reply] = w.bot_messages()
        assert "I cannot read pictures right now" in reply.content
        assert "GIGI_DISCORD_IMAGE_MAX_MB must be a number" in caplog.text
        assert fake.requests_to("chat") == []


async def test_a_download_larger_than_discord_stated_is_refused(tmp_path, monkeypatch) -> None:
    """The CDN serves more than the attachment's stated size: the cap holds after download."""
    monkeypatch.setenv("GIGI_DISCORD_IMAGE_HOSTS", SIM_CDN)
    async with FakeOpenAI() as fake, world(tmp_path, plugins=["openai"]) as w:
        await _configure(w, fake)
        real = w.bot.http.get_from_cdn

        async def growing_cdn(url: str) -> bytes:
            return await real(url) + b"\x00" * (11 * 1024 * 1024)  # past the 10 MB cap

        w.bot.http.get_from_cdn = growing_cdn
        await w.member.send(
            w.channel, f"<@{w.bot.user.id}> hi", attachments=[("c.png", png_bytes())]
        )
        [grown] = w.bot_messages()
        assert "c.png is larger than Discord said; the limit is 10.0 MB" in grown.content
        assert fake.requests_to("chat") == []


async def test_a_cdn_that_never_answers_is_given_up_on() -> None:
    """Outside SimCord (its clock is virtual): a download that never completes ends at the
    timeout with a sentence to try again, and names no URL."""

    class StalledCdn:
        async def get_from_cdn(self, url: str) -> bytes:
            await asyncio.Event().wait()
            return b""

    @dataclass
    class Stated:
        id: int = 1
        filename: str = "c.png"
        url: str = "https://cdn.discordapp.com/attachments/1/2/c.png"

    with pytest.raises(AttachmentRefused) as err:
        await fetch(StalledCdn(), Stated(), ImageLimits(timeout=0.01))
    assert str(err.value) == "Downloading c.png took too long; please try again."


PROVIDERS = [
    # (credential provider, fake, model, the vendor's refusal, the route answering)
    ("openai", FakeOpenAI, "gpt-4o", "image_url is only supported by certain models", "chat"),
    ("openai", FakeOpenAI, "gpt-4o", "only supported by certain models", "responses"),
    ("openrouter", FakeOpenRouter, "openrouter/openai/gpt-4o", "only supported by", "chat"),
    ("anthropic", FakeAnthropic, "claude-sonnet-4-5", "does not support image input", "chat"),
    ("gemini", FakeGemini, "gemini-2.5-flash", "Image input modality is not enabled", "chat"),
]


@pytest.mark.parametrize(("provider", "server", "model", "refusal", "route"), PROVIDERS)
async def test_each_provider_gets_the_picture_and_a_refusal_reads_well(
    tmp_path, monkeypatch, provider, server, model, refusal, route
) -> None:
    """A mention's picture reaches each provider's wire-level fake as its own image part
    (OpenAI's Responses API too, the operator's ``GIGI_OPENAI_API=responses``); a model
    of that provider that takes no pictures answers with the vendor's words."""
    monkeypatch.setenv("GIGI_DISCORD_IMAGE_HOSTS", SIM_CDN)
    if route == "responses":
        monkeypatch.setenv("GIGI_OPENAI_API", "responses")
    picture = png_bytes(3, 5)
    async with (
        server() as fake,
        world(tmp_path, plugins=["openai", "anthropic", "gemini"]) as w,
    ):
        owner = f"guild:{w.gid}"
        await w.kernel.llm.add_credential(
            owner, provider, "main", "key-0123456789abcdef", base_url=fake.base_url
        )
        await w.kernel.llm.set_profile(owner, "chat", "main", model)
        if route == "responses":
            fake.reply_response(text="A tall grey picture.")
        else:
            fake.reply_text("A tall grey picture.")
        await w.member.send(
            w.channel, f"<@{w.bot.user.id}> what?", attachments=[("t.png", picture)]
        )
        [answer] = w.bot_messages()
        assert answer.content.startswith("A tall grey picture."), answer.content
        [(media_type, data)] = [p for r in fake.requests for p in fake.image_parts(r)]
        assert (media_type, base64.b64decode(data)) == ("image/png", picture)
        if route == "responses":
            [asked] = fake.requests
            assert asked.route == "responses"
            assert any(p["type"] == "input_image" for p in asked.json["input"][-1]["content"])

        fake.text_only_models = frozenset({model.removeprefix("openrouter/")})
        await w.member.send(w.channel, f"<@{w.bot.user.id}> and?", attachments=[("t.png", picture)])
        refused = w.bot_messages()[-1].content
        assert f"The model {model} did not take the picture" in refused, refused
        assert refusal in refused and "purpose:vision" in refused
