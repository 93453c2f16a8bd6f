"""``OutboundMessage.files`` on Discord: the picture is uploaded with the post, not linked."""

from __future__ import annotations

from discord_watch_plugin import Watch, WatchAdmin
from discord_world import world

from gigi_core.events import OutboundFile, OutboundMessage
from gigi_core.testing.fake_providers import png_bytes


async def test_a_post_with_a_picture_uploads_it_under_the_last_part(tmp_path) -> None:
    extra = [("watch", Watch(tmp_path)), ("wadmin", WatchAdmin(tmp_path))]
    async with world(tmp_path, [], extra=extra) as w:
        await w.kernel.enable_plugin(w.gid, "watch")
        picture = png_bytes(4, 4)
        message = OutboundMessage(
            w.gid,
            str(w.channel.id),
            "Here is the picture.",
            files=(OutboundFile("picture.png", picture, "image/png"),),
        )
        await w.kernel.outbox.post(message, plugin="watch")
        [sent] = w.bot_messages()
        assert sent.content == "Here is the picture."
        [attached] = sent.attachments
        assert attached.filename == "picture.png"
        assert await attached.read() == picture
