"""ENV-05 / ENV-07 with ``persist_history``: the history a server chose to keep survives a
restart, obeys its retention, is erased with the member, the message, the channel or the
server, and is never written for a paused or secure channel; off (the default) nothing is."""

from __future__ import annotations

import pathlib
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
from gigi_ambient.history import Entry
from gigi_ambient.service import service_of
from gigi_ambient.tables import history

from gigi_ambient_tests.ambient_helpers import GUILD, HERE, envelope, open_world
from gigi_core import hookimpl
from gigi_core.events import MessageCreated, MessageDeleted, MessageEdited
from gigi_core.store.sealing import generate_key
from gigi_core.testing import open_test_kernel

KEEP = {"persist_history": True, "short_path": [[".*", "^7$"]]}  # author 7: no model call


class MemoryKeeps:
    """Stands in for guild memory: it keeps the listed channels for ``days``."""

    def __init__(self, days: int = 30, channels: frozenset[str] = frozenset({HERE})) -> None:
        self.days, self.channels = days, channels

    @hookimpl
    def channel_retention(self, guild_id, channel_id, kernel):
        return self.days if channel_id in self.channels else None


def keeps(days: int = 30, channels: frozenset[str] = frozenset({HERE})) -> list:
    return [("keeps", MemoryKeeps(days, channels))]


async def rows(kernel) -> list[tuple[str, str, str | None, bytes]]:
    async with kernel.db.engine.connect() as conn:
        found = await conn.execute(
            sa.select(history.c.author_id, history.c.role, history.c.message_id, history.c.sealed)
            .where(history.c.guild_id == GUILD)
            .order_by(history.c.seq)
        )
        return [tuple(r) for r in found]


async def test_stored_history_survives_a_restart(tmp_path: pathlib.Path, database_url: str) -> None:
    key = generate_key()
    async with open_world(
        tmp_path, database_url, config=KEEP, secret_key=key, extra=keeps()
    ) as world:
        world.svc.clock = lambda: datetime.now(UTC)  # the answer's time, as after a restart
        await world.say("archived before the restart", author="7")
        world.fake.reply_text(envelope(answer="I heard you", answer_needed=True))
        await world.say("hello persona", author="8")
        stored = await rows(world.kernel)
        assert [(a, r) for a, r, _, _ in stored] == [
            ("7", "user"),
            ("8", "user"),
            ("self", "assistant"),
        ]
        assert all(b"archived" not in sealed and b"hello" not in sealed for *_, sealed in stored)
    async with open_test_kernel(
        tmp_path,
        plugins=["ambient", "openai"],
        extra_plugins=keeps(),
        database_url=database_url,
        secret_key=key,
    ) as kernel:
        svc = service_of(kernel)
        await kernel.publish(
            MessageCreated(
                guild_id=GUILD, message_id="9001", channel_id=HERE, author_id="7",
                created_at=datetime.now(UTC), text="after the restart",
            )
        )  # fmt: skip
        await kernel.events.drain()
        await svc.drain()
        texts = [e.text for e in svc.history(GUILD).entries]
        assert texts == [
            "archived before the restart", "hello persona", "I heard you", "after the restart",
        ]  # fmt: skip


async def test_nothing_is_stored_by_default_and_turning_it_off_deletes_the_rows(
    tmp_path: pathlib.Path,
) -> None:
    async with open_world(
        tmp_path, None, config={"short_path": [[".*", "^7$"]]}, extra=keeps()
    ) as world:
        await world.say("kept in memory only", author="7")
        assert len(world.svc.history(GUILD)) == 1 and await rows(world.kernel) == []
        await world.kernel.configure_plugin(GUILD, "ambient", KEEP)
        await world.say("now stored", author="7")
        assert len(await rows(world.kernel)) == 2  # what memory held is written too
        await world.kernel.configure_plugin(GUILD, "ambient", {**KEEP, "persist_history": False})
        await world.say("off again", author="7")
        assert await rows(world.kernel) == [] and len(world.svc.history(GUILD)) == 3


async def test_stored_history_is_erased_with_messages_members_and_the_server(
    tmp_path: pathlib.Path, database_url: str
) -> None:
    from gigi_ambient import delete_user_data, export_user_data, purge_guild_data

    async with open_world(tmp_path, database_url, config=KEEP, extra=keeps()) as world:
        ids = [await world.say(f"message {n}", author="7") for n in range(4)]
        await world.kernel.publish(
            MessageDeleted(guild_id=GUILD, channel_id=HERE, message_ids=(ids[0],))
        )
        for mid, text, withheld in ((ids[1], "", True), (ids[2], "message 2, edited", False)):
            await world.kernel.publish(
                MessageEdited(
                    guild_id=GUILD, message_id=mid, channel_id=HERE, text=text,
                    edited_at=datetime.now(UTC), withheld=withheld,
                )
            )  # fmt: skip
        await world.settle()
        assert [m for _, _, m, _ in await rows(world.kernel)] == [ids[2], ids[3]]
        # the edit rewrote the stored text: a fresh process reads the new one
        world.svc.history(GUILD).entries.clear()
        exported = await export_user_data("7", GUILD, world.kernel)
        assert [e["text"] for e in exported["history"]] == ["message 2, edited", "message 3"]
        assert await delete_user_data("7", GUILD, world.kernel) == {"history": 0, "stored": 2}
        assert await rows(world.kernel) == []
        await world.say("one more", author="7")
        assert await purge_guild_data(GUILD, world.kernel) == {"channels": 1, "history": 1}
        assert await rows(world.kernel) == []


async def test_stored_history_obeys_its_retention(
    tmp_path: pathlib.Path, database_url: str
) -> None:
    async with open_world(tmp_path, database_url, config=KEEP, extra=keeps()) as world:
        world.svc.clock = lambda: datetime.now(UTC)
        await world.say("old news", author="7", created_at=datetime.now(UTC) - timedelta(days=8))
        await world.say("fresh news", author="7")  # old news is past the 7 days
        assert [e.text for e in world.svc.history(GUILD).entries] == ["fresh news"]
        assert len(await rows(world.kernel)) == 1
        # the hourly sweep also cuts servers that went quiet
        await world.kernel.configure_plugin(GUILD, "ambient", {**KEEP, "history_retention_days": 1})
        world.svc.clock = lambda: datetime.now(UTC) + timedelta(days=2)
        assert "ambient.history_expire" in world.kernel.registry.jobs
        assert await world.svc.expire_stored() == 1 and await rows(world.kernel) == []


async def test_paused_and_secure_channels_are_never_written(tmp_path: pathlib.Path) -> None:
    async with open_world(tmp_path, None, config=KEEP, extra=keeps()) as world:
        settings = await world.svc.settings(GUILD)
        await world.kernel.set_channel_state(GUILD, HERE, "paused")
        await world.say("not even delivered", author="7")
        # an entry memory took before the pause is not written while the channel is paused
        world.svc.history(GUILD).append(Entry(HERE, "user", "7", "just before the pause", "55"))
        await world.svc.persist(GUILD, settings)
        assert await rows(world.kernel) == []
        await world.kernel.set_channel_state(GUILD, HERE, "active")
        await world.svc.persist(GUILD, settings)
        assert [m for _, _, m, _ in await rows(world.kernel)] == ["55"]
        await world.kernel.set_channel_state(GUILD, HERE, "secure")  # ChannelSecured: forgotten
        await world.settle()
        assert await rows(world.kernel) == [] and len(world.svc.history(GUILD)) == 0


async def test_history_is_stored_only_where_the_guilds_memory_keeps_the_channel(
    tmp_path: pathlib.Path, database_url: str
) -> None:
    """persist_history on, but no memory plugin keeps this channel: nothing is stored."""
    async with open_world(
        tmp_path, database_url, config=KEEP, extra=keeps(channels=frozenset())
    ) as world:
        world.svc.clock = lambda: datetime.now(UTC)
        await world.say("memory keeps nothing here", author="7")
        assert await rows(world.kernel) == []
        assert [e.text for e in world.svc.history(GUILD).entries] == ["memory keeps nothing here"]


async def test_history_is_stored_no_longer_than_the_guilds_memory_keeps(
    tmp_path: pathlib.Path, database_url: str
) -> None:
    """Memory keeps the channel 1 day (ambient's own retention is 7): two days on, the
    stored rows are gone."""
    async with open_world(tmp_path, database_url, config=KEEP, extra=keeps(days=1)) as world:
        world.svc.clock = lambda: datetime.now(UTC)
        await world.say("kept today", author="7")
        assert [a for a, *_ in await rows(world.kernel)] == ["7"]
        world.svc.clock = lambda: datetime.now(UTC) + timedelta(days=2)
        await world.say("said now, seen two days on", author="7")
        assert await rows(world.kernel) == []
