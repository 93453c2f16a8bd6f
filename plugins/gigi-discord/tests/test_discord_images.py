"""Pictures in: attachments checked before download, fetched from the CDN through the bot,
sent to the model as image parts, and never stored (the canary scan proves it)."""

from __future__ import annotations

import base64
import logging
from dataclasses import dataclass

import pytest
from discord_world import world
from gigi_discord.attachments import AttachmentRefused, ImageLimits, screen
from sqlalchemy import text

from gigi_core.testing.fake_providers import FakeOpenAI, png_bytes

SIM_CDN = "cdn.simcord.invalid"  # the simulator's CDN stands in for Discord's
MARKER = b"qzkwcanaryvxpicture7f3b9d2e1a"


@dataclass
class _Attachment:
    filename: str
    size: int
    content_type: str | None
    url: str
    id: int = 1


def _needles(marker: bytes) -> list[bytes]:
    """The marker raw, hex and base64-encoded at each of the three byte alignments."""
    out = [marker, marker.hex().encode()]
    for shift in range(3):
        encoded = base64.b64encode(b"x" * shift + marker)
        out.append(encoded[4:-4])
    return out


def test_screening_refuses_before_download() -> None:
    limits = ImageLimits(hosts=("cdn.discordapp.com",))
    cdn = "https://cdn.discordapp.com/attachments/1/2/"
    with pytest.raises(AttachmentRefused, match="huge.png is 50.0 MB; the limit is 10.0 MB"):
        screen([_Attachment("huge.png", 50 * 1024 * 1024, "image/png", cdn + "huge.png")], limits)
    with pytest.raises(AttachmentRefused, match="not stored on Discord's own servers"):
        screen([_Attachment("x.png", 10, "image/png", "https://evil.example/x.png")], limits)
    with pytest.raises(AttachmentRefused, match="not stored on Discord's own servers"):
        screen([_Attachment("x.png", 10, "image/png", "http://cdn.discordapp.com/x.png")], limits)
    with pytest.raises(AttachmentRefused, match="notes.txt is text/plain"):
        screen([_Attachment("notes.txt", 10, "text/plain", cdn + "notes.txt")], limits)
    five = [_Attachment(f"{i}.png", 10, "image/png", cdn + f"{i}.png") for i in range(5)]
    with pytest.raises(AttachmentRefused, match="You attached 5 files; I read at most 4"):
        screen(five, limits)


async def _vision_world(tmp_path, monkeypatch, fake: FakeOpenAI):
    monkeypatch.setenv("GIGI_DISCORD_IMAGE_HOSTS", SIM_CDN)
    return world(tmp_path, plugins=["openai"])


async def _configure(w, fake: FakeOpenAI, model: str = "gpt-4o") -> None:
    owner = f"guild:{w.gid}"
    await w.kernel.llm.add_credential(
        owner, "openai-compatible", "main", "sk-vision-0123456789", base_url=fake.base_url
    )
    await w.kernel.llm.set_profile(owner, "chat", "main", model)


async def test_a_mentioned_picture_reaches_the_model_and_nothing_of_it_is_stored(
    tmp_path, monkeypatch, caplog
) -> None:
    caplog.set_level(logging.DEBUG)
    picture = png_bytes(6, 4, marker=MARKER)
    async with FakeOpenAI() as fake, await _vision_world(tmp_path, monkeypatch, fake) as w:
        await _configure(w, fake)
        fake.reply_text("A small grey picture.")
        before = len(w.bot_messages())
        await w.member.send(
            w.channel, f"<@{w.bot.user.id}> what is it?", attachments=[("c.png", picture)]
        )
        [reply] = w.bot_messages()[before:]
        assert reply.content.startswith("A small grey picture.")
        [sent] = fake.requests_to("chat")
        content = sent.json["messages"][-1]["content"]
        assert content[0] == {"type": "text", "text": "what is it?"} or "what is it?" in str(
            content[0]
        )
        url = content[-1]["image_url"]["url"]
        assert base64.b64decode(url.partition(",")[2]) == picture

        # the canary: not in any table (runs, steps, usage, audit...) nor in any log line
        dumped = []
        async with w.kernel.db.engine.connect() as conn:
            tables = await conn.run_sync(
                lambda sync: __import__("sqlalchemy").inspect(sync).get_table_names()
            )
            for table in tables:
                for row in await conn.execute(text(f'SELECT * FROM "{table}"')):
                    dumped.append(repr(tuple(row)).encode())
        blob = b"\n".join(dumped)
        logs = "\n".join(r.getMessage() for r in caplog.records).encode()
        for needle in _needles(MARKER):
            assert needle not in blob
            assert needle not in logs


async def test_a_model_without_image_input_gets_a_clear_reply(tmp_path, monkeypatch) -> None:
    async with FakeOpenAI() as fake, await _vision_world(tmp_path, monkeypatch, fake) as w:
        await _configure(w, fake, "gpt-3.5-turbo")
        fake.text_only_models = frozenset({"gpt-3.5-turbo"})
        before = len(w.bot_messages())
        await w.member.send(w.channel, f"<@{w.bot.user.id}>", attachments=[("c.png", png_bytes())])
        [reply] = w.bot_messages()[before:]
        assert "did not take the picture" in reply.content, reply.content
        assert "purpose:vision" in reply.content


async def test_a_profile_declaring_no_images_refuses_before_calling(tmp_path, monkeypatch) -> None:
    async with FakeOpenAI() as fake, await _vision_world(tmp_path, monkeypatch, fake) as w:
        owner = f"guild:{w.gid}"
        await _configure(w, fake)
        await w.kernel.llm.set_profile(owner, "chat", "main", "gpt-4o", params={"images": False})
        before = len(w.bot_messages())
        await w.member.send(
            w.channel, f"<@{w.bot.user.id}> look", attachments=[("c.png", png_bytes())]
        )
        [reply] = w.bot_messages()[before:]
        assert "does not read pictures" in reply.content, reply.content
        assert fake.requests_to("chat") == []


async def test_a_png_name_on_other_bytes_and_an_animated_gif_are_refused(
    tmp_path, monkeypatch
) -> None:
    gif = (
        b"GIF89a\x01\x00\x01\x00\x00\x00\x00"
        + (b",\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00") * 2
        + b";"
    )
    async with FakeOpenAI() as fake, await _vision_world(tmp_path, monkeypatch, fake) as w:
        await _configure(w, fake)
        before = len(w.bot_messages())
        await w.member.send(
            w.channel, f"<@{w.bot.user.id}> hi", attachments=[("fake.png", b"PK\x03\x04zip")]
        )
        await w.member.send(w.channel, f"<@{w.bot.user.id}> hi", attachments=[("anim.gif", gif)])
        fake_png, animated = w.bot_messages()[before:]
        assert "fake.png is not a PNG, JPEG, GIF or WebP image" in fake_png.content
        assert "anim.gif is animated" in animated.content
        assert fake.requests_to("chat") == []


async def test_a_50_mb_attachment_is_refused_without_a_model_call(tmp_path, monkeypatch) -> None:
    async with FakeOpenAI() as fake, await _vision_world(tmp_path, monkeypatch, fake) as w:
        await _configure(w, fake)
        big = png_bytes() + b"\x00" * (50 * 1024 * 1024)
        before = len(w.bot_messages())
        await w.member.send(w.channel, f"<@{w.bot.user.id}> hi", attachments=[("big.png", big)])
        [reply] = w.bot_messages()[before:]
        assert "big.png is 50.0 MB; the limit is 10.0 MB" in reply.content
        assert fake.requests_to("chat") == []


async def test_an_admin_sets_the_vision_profile_and_an_image_one_needs_a_drawing_provider(
    tmp_path, monkeypatch
) -> None:
    async with FakeOpenAI() as fake, await _vision_world(tmp_path, monkeypatch, fake) as w:
        await _configure(w, fake)

        async def profile(purpose: str, model: str) -> str:
            result = await w.admin.slash(
                w.channel, "llm profile set", purpose=purpose, credential="main", model=model
            )
            return result.followups[-1].content if result.followups else result.response.content

        assert "vision now uses gpt-4o" in await profile("vision", "gpt-4o")
        refused = await profile("image", "gpt-image-1")
        assert "'openai-compatible' cannot draw pictures" in refused
        assert "use an openai or gemini credential" in refused
        profiles = {p.purpose: p.model for p in await w.kernel.llm.list_profiles(f"guild:{w.gid}")}
        assert profiles["vision"] == "gpt-4o" and "image" not in profiles


async def test_ask_with_an_image_option_sends_the_picture(tmp_path, monkeypatch) -> None:
    async with FakeOpenAI() as fake, await _vision_world(tmp_path, monkeypatch, fake) as w:
        await _configure(w, fake)
        fake.reply_text("A square.")
        picture = png_bytes(3, 3)
        result = await w.member.slash(
            w.channel, "ask", question="what shape?", image=("shape.png", picture)
        )
        text = result.followups[-1].content if result.followups else result.response.content
        assert text.startswith("A square."), text
        url = fake.requests_to("chat")[0].json["messages"][-1]["content"][-1]["image_url"]["url"]
        assert base64.b64decode(url.partition(",")[2]) == picture

        refused = await w.member.slash(
            w.channel, "ask", question="and this?", image=("notes.txt", b"plain text")
        )
        said = refused.followups[-1].content if refused.followups else refused.response.content
        assert "I can only read pictures" in said and "notes.txt" in said
        assert len(fake.requests_to("chat")) == 1
