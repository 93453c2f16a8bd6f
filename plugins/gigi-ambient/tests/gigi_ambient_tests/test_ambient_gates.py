"""Who the persona answers (issue 28, item 4): the same gate as memory's — never a webhook's
message (even one not marked as a bot), never a private thread, a DM or a group DM, even
in a channel id an admin enabled; a member's message in an ordinary channel still is."""

from __future__ import annotations

import pytest

from gigi_ambient_tests.ambient_helpers import GUILD, HERE, envelope


async def test_a_webhook_message_not_marked_as_a_bot_is_not_answered(world) -> None:
    world.fake.reply_text(envelope(answer="Hello hook!", answer_needed=True))
    await world.say("deploy finished", author_is_webhook=True, author_is_bot=False)
    assert world.fake.requests_to("chat") == [] and world.poster.posts == []
    assert world.svc.history(GUILD).entries == []  # not even kept as history


@pytest.mark.parametrize("kind", ["private_thread", "dm", "group_dm"])
async def test_private_threads_and_dms_are_not_answered(world, kind: str) -> None:
    world.fake.reply_text(envelope(answer="Hello!", answer_needed=True))
    await world.say("anyone around?", channel_kind=kind)
    assert world.fake.requests_to("chat") == [] and world.poster.posts == []
    assert world.svc.history(GUILD).entries == []


async def test_a_member_in_a_public_thread_enabled_itself_is_answered(world) -> None:
    await world.svc.enable(GUILD, "300", "You are Luma.", "1")
    world.fake.reply_text(envelope(answer="Hi there", answer_needed=True))
    await world.say("hello", channel="300", channel_kind="thread", parent_channel_id=HERE)
    assert [p.text for p in world.poster.posts] == ["Hi there"]
