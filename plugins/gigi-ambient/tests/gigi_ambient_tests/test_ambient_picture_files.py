"""With the images plugin, the persona's pictures are posted as image files under the
member's message, drawn by the guild's image profile: no links."""

from __future__ import annotations

import pathlib

from gigi_ambient_tests.ambient_helpers import GUILD, HERE, envelope, open_world
from gigi_core import Actor
from gigi_core.testing.fake_providers import png_bytes

ADMIN_MEMBER = {"42": (Actor(id="42", is_admin=True), frozenset({HERE}))}


async def test_the_images_plugin_posts_the_pictures_as_files(
    tmp_path: pathlib.Path, database_url: str
) -> None:
    async with open_world(tmp_path, database_url, plugins=("images",)) as world:
        await world.kernel.enable_plugin(GUILD, "images")
        await world.kernel.llm.set_profile(f"guild:{GUILD}", "image", "main", "gpt-image-1")
        world.poster.members = ADMIN_MEMBER
        picture = png_bytes(5, 5)
        world.fake.reply_image(picture)
        world.fake.reply_text(
            envelope(answer="Here you go!", answer_needed=True, picture="a red cat")
        )
        mid = await world.say("draw me a cat")
        texts = [p.text for p in world.poster.posts]
        assert "Here you go!" in texts
        [drawn] = [p for p in world.poster.posts if p.files]
        assert [(f.name, f.data) for f in drawn.files] == [("picture-1.png", picture)]
        assert (drawn.channel_id, drawn.reply_to) == (HERE, mid)
        assert not any("http" in t for t in texts)  # no links
        assert world.fake.requests_to("images")[0].json["prompt"] == "a red cat"
        today = await world.svc.today(GUILD)
        assert today["pictures"] == 1
