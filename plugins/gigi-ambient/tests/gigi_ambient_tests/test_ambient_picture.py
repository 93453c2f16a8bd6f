"""``picture`` / ``picture_edit``: delegated to ``ambient.picture``, which calls the action an
image plugin declares for it (``x-gigi-implements``) as the author, within the daily budget;
the URLs are posted and the outcome is a note in the run's trace."""

from __future__ import annotations

import pathlib

from gigi_ambient_tests.ambient_helpers import GUILD, HERE, envelope, open_world
from gigi_ambient_tests.ambient_painter_plugin import Painter
from gigi_core import Actor

ADMIN_MEMBER = {"42": (Actor(id="42", is_admin=True), frozenset({HERE}))}


async def notes(world) -> list[tuple[str | None, str]]:
    run = await world.kernel.agent.runs.last(guild_id=GUILD)
    trace = await world.kernel.agent.trace(run.id)
    return [(s["tool"], s["status"]) for s in trace["steps"] if s["kind"] == "note"]


def draw(**fields):
    return envelope(answer="Here you go!", answer_needed=True, picture="a red cat", **fields)


async def test_without_an_image_plugin_the_picture_is_a_note_in_the_trace(
    tmp_path: pathlib.Path,
) -> None:
    async with open_world(tmp_path, None) as world:
        world.poster.members = ADMIN_MEMBER
        world.fake.reply_text(draw(picture_count=2))
        await world.say("draw me a cat")
        assert world.answers() == ["Here you go!"]  # the answer is not lost
        assert await notes(world) == [("ambient.picture", "no_implementation")]
        # a persona that stays silent (ENV-02) makes no picture either
        world.fake.reply_text(envelope(answer="meh", answer_needed=False, picture="a cat"))
        await world.say("cats are fine I guess")
        assert world.answers() == ["Here you go!"] and await notes(world) == []


async def test_an_image_plugin_makes_the_pictures_and_they_are_posted(
    tmp_path: pathlib.Path, database_url: str
) -> None:
    painter = Painter(tmp_path)
    async with open_world(tmp_path, database_url, extra=[("painter", painter)]) as world:
        await world.kernel.enable_plugin(GUILD, "painter")
        await world.kernel.configure_plugin(GUILD, "ambient", {"picture_tokens": 1000})
        world.poster.members = ADMIN_MEMBER
        world.fake.reply_text(draw(picture_count=9))  # clamped to 4
        mid = await world.say("draw me four cats")
        answer, pictures = world.poster.posts
        assert answer.text == "Here you go!"
        assert pictures.text.splitlines() == [f"https://img.example/{n}.png" for n in range(4)]
        assert (pictures.channel_id, pictures.reply_to) == (HERE, mid)
        assert painter.calls == [{"actor": "42", "prompt": "a red cat", "count": 4}]
        assert await notes(world) == [("ambient.picture", "posted")]
        today = await world.svc.today(GUILD)
        assert today["pictures"] == 4 and today["tokens"] >= 4000  # budgeted as tokens
        # picture_edit: the message it replies to is the source, given by id only
        world.fake.reply_text(draw(picture_count=1, picture_edit=True))
        await world.say("make it blue", reply_to_id="777")
        assert painter.calls[-1] == {
            "actor": "42", "prompt": "a red cat", "count": 1, "source_message_id": "777",
        }  # fmt: skip


async def test_only_members_allowed_to_may_trigger_a_picture(tmp_path: pathlib.Path) -> None:
    painter = Painter(tmp_path)
    async with open_world(tmp_path, None, extra=[("painter", painter)]) as world:
        await world.kernel.enable_plugin(GUILD, "painter")
        world.fake.reply_text(draw())
        await world.say("draw me a cat")  # a member without ambient.picture (admins by default)
        assert painter.calls == [] and world.answers() == ["Here you go!"]
        assert await notes(world) == [("ambient.picture", "denied")]
        await world.kernel.add_grant(GUILD, "ambient.picture", "user", "42")
        world.fake.reply_text(draw())
        await world.say("draw me a cat")
        assert len(painter.calls) == 1 and await notes(world) == [("ambient.picture", "posted")]


async def test_pictures_stop_at_the_daily_budget_and_bad_results_post_nothing(
    tmp_path: pathlib.Path,
) -> None:
    painter = Painter(tmp_path, urls=["javascript:alert(1)", "not a url"])
    async with open_world(tmp_path, None, extra=[("painter", painter)]) as world:
        await world.kernel.enable_plugin(GUILD, "painter")
        world.poster.members = ADMIN_MEMBER
        world.fake.reply_text(draw())
        await world.say("draw")
        assert world.answers() == ["Here you go!"]
        assert await notes(world) == [("ambient.picture", "bad_result")]
        config = {"daily_token_budget": 100_000, "picture_tokens": 100_000}
        await world.kernel.configure_plugin(GUILD, "ambient", config)
        world.fake.reply_text(draw())
        await world.say("draw again")
        assert len(painter.calls) == 1  # the budget stopped the second before the plugin
        assert await notes(world) == [("ambient.picture", "over_budget")]


async def test_an_implementation_that_needs_confirmation_is_not_run(
    tmp_path: pathlib.Path,
) -> None:
    painter = Painter(tmp_path, confirm="always")
    async with open_world(tmp_path, None, extra=[("painter", painter)]) as world:
        await world.kernel.enable_plugin(GUILD, "painter")
        await world.kernel.configure_plugin(GUILD, "ambient", {"picture_action": "painter.draw"})
        world.poster.members = ADMIN_MEMBER
        world.fake.reply_text(draw())
        await world.say("draw")
        assert painter.calls == [] and await notes(world) == [
            ("ambient.picture", "needs_confirmation")
        ]
        # a pinned action that is not an implementation counts as none
        await world.kernel.configure_plugin(GUILD, "ambient", {"picture_action": "ambient.status"})
        world.fake.reply_text(draw())
        await world.say("draw")
        assert await notes(world) == [("ambient.picture", "no_implementation")]
