"""gigi memory import: a DiscordChatExporter export through the live policy gate and writer."""

from __future__ import annotations

import asyncio
import json

import click
import gigi_memory
import pytest
from click.testing import CliRunner
from gigi_memory.ingest.importer import ExportError, ImportRefused, parse_export, run_import
from gigi_memory.service import service_of
from memory_helpers import call, count, dump_text, enable, publish, rows

from gigi_core.events import MessageDeleted
from gigi_core.testing import open_test_kernel

KEY = "a" * 43


def export(*messages: dict, channel: str = "c1", channel_type: str = "GuildTextChat") -> dict:
    return {
        "guild": {"id": "g1", "name": "Guild"},
        "channel": {"id": channel, "type": channel_type, "name": "general"},
        "messages": list(messages),
    }


def msg(
    mid: str, content: str, *, author: str = "u1", bot: bool = False, days_ago: float = 1, **extra
) -> dict:
    from datetime import UTC, datetime, timedelta

    when = datetime.now(UTC) - timedelta(days=days_ago)
    return {
        "id": mid,
        "type": "Default",
        "timestamp": when.isoformat(),
        "timestampEdited": None,
        "content": content,
        "author": {"id": author, "name": "someone", "isBot": bot},
        "mentions": [],
        **extra,
    }


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ([], "$"),
        ({"guild": {"id": "g1"}, "channel": {"id": "c1"}}, "$.messages"),
        ({"guild": "g1", "channel": {"id": "c1"}, "messages": []}, "$.guild"),
        (export(msg("1", "ok"), {"id": "2"}), "$.messages[1].author"),
        (export(msg("1", "ok"), msg("2", "ok", timestamp="yesterday")), "$.messages[1].timestamp"),
        (export(msg("1", "ok", author=123)), "$.messages[0].author.id"),
        (export(msg("1", "ok", mentions=[{"name": "x"}])), "$.messages[0].mentions[0].id"),
        (export(msg("1", None)), "$.messages[0].content"),
    ],
)
def test_a_malformed_export_names_the_first_bad_path(data, path) -> None:
    with pytest.raises(ExportError) as info:
        parse_export(data)
    assert info.value.path == path


async def test_import_goes_through_the_gate_and_dedupes(kernel) -> None:
    await enable(kernel, days=30)
    data = parse_export(
        export(
            msg("101", "imported postgres talk", days_ago=2, mentions=[{"id": "42"}]),
            msg("102", "a bot said postgres", bot=True),
            msg("103", "too old for retention", days_ago=40),
            msg("104", "joined", type="GuildMemberJoin"),
            msg(
                "105",
                "mail me at canary.person@example.com",
                timestampEdited="2026-01-01T00:00:00Z",
            ),
            msg("101", "the same id twice"),
        )
    )
    report = await run_import(kernel, data, guild_id="g1")
    assert report.as_dict() == {
        "guild_id": "g1",
        "channel_id": "c1",
        "messages": 6,
        "imported": 2,
        "already_remembered": 1,
        "skipped": {"bots": 1, "past retention": 1, "system messages": 1},
    }
    assert await count(kernel, text="postgres") == 1
    assert await count(kernel, mentioned="42") == 1
    assert "canary.person" not in await dump_text(kernel)
    again = await run_import(kernel, data, guild_id="g1")
    assert again.imported == 0 and again.already == 3
    # A message deleted after the import stays deleted when the export is imported again.
    await publish(kernel, MessageDeleted(guild_id="g1", channel_id="c1", message_ids=("101",)))
    await run_import(kernel, data, guild_id="g1")
    assert await count(kernel, text="postgres") == 0
    (row,) = await rows(kernel, "SELECT edited_ms FROM memory_messages WHERE message_id = '105'")
    assert row.edited_ms is not None


async def test_import_refuses_channels_memory_must_not_hold(kernel) -> None:
    data = parse_export(export(msg("1", "hello")))
    with pytest.raises(ImportRefused, match="not remembered") as refused:
        await run_import(kernel, data, guild_id="g1")  # the channel is off
    # The import runs from a shell: its fix is the shell command, not Discord's slash syntax.
    assert "gigi memory enable --guild g1 --channel c1 --retention-days N" in str(refused.value)
    await enable(kernel)
    for kind in ("DirectTextChat", "GuildPrivateThread"):
        with pytest.raises(ImportRefused, match="never remembered"):
            await run_import(
                kernel, parse_export(export(msg("1", "x"), channel_type=kind)), guild_id="g1"
            )
    with pytest.raises(ImportRefused, match="not enabled in guild g2"):
        await run_import(kernel, data, guild_id="g2", allow_other_guild=True)
    await kernel.set_channel_state("g1", "c1", "secure", by="admin")
    with pytest.raises(ImportRefused, match="secure"):
        await run_import(kernel, data, guild_id="g1")
    during = parse_export(
        export(msg("2", "from before"), msg("3", "from the secure time", days_ago=0))
    )
    await asyncio.sleep(0.01)
    await kernel.set_channel_state("g1", "c1", "active", by="admin")
    service_of(kernel).cache.secured.clear()  # the live hold after securing has passed
    # Messages from inside the recorded secure period are skipped.
    report = await run_import(kernel, during, guild_id="g1")
    assert report.imported == 1 and report.skipped == {"while the channel was secure": 1}


def test_the_cli_imports_with_progress_and_json(database_url, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GIGI_SECRET_KEY", KEY)
    monkeypatch.setenv("GIGI_DATABASE_URL", database_url)
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "memory")

    async def setup() -> None:
        async with open_test_kernel(
            tmp_path, plugins=["memory"], database_url=database_url, secret_key=KEY
        ) as k:
            await k.enable_plugin("g1", "memory")
            await enable(k)

    asyncio.run(setup())
    good = tmp_path / "export.json"
    good.write_text(json.dumps(export(*(msg(str(i), f"message {i}") for i in range(1, 251)))))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(export(msg("1", "fine"), {"id": "2", "content": "x"})))

    @click.group()
    def root() -> None:
        pass

    gigi_memory.register_commands(root)
    runner = CliRunner()
    refused = runner.invoke(root, ["memory", "import", str(bad), "--guild", "g1"])
    assert refused.exit_code == 1 and "$.messages[1].author" in refused.output
    assert "nothing was imported" in refused.output
    done = runner.invoke(root, ["memory", "import", str(good), "--guild", "g1"])
    assert done.exit_code == 0, done.output
    assert "imported 250 of 250 message(s)" in done.output
    again = runner.invoke(root, ["memory", "import", str(good), "--guild", "g1", "--json"])
    assert json.loads(again.output)["already_remembered"] == 250

    async def check() -> None:
        async with open_test_kernel(
            tmp_path, plugins=["memory"], database_url=database_url, secret_key=KEY
        ) as k:
            assert await count(k, text="message") == 250
            assert (await call(k, "recent", limit=1))["messages"][0]["snippet"] == "message 250"

    asyncio.run(check())


async def test_an_import_after_a_privacy_delete_skips_the_members_old_messages(kernel) -> None:
    await enable(kernel, days=30)
    await kernel.privacy.delete("u7", "g1")
    data = parse_export(
        export(msg("201", "canaryforgotten words", author="u7"), msg("202", "kept words"))
    )
    report = await run_import(kernel, data, guild_id="g1")
    assert report.imported == 1
    assert report.skipped == {"authors who asked to be forgotten": 1}
    assert "canaryforgotten" not in await dump_text(kernel)


async def test_import_skips_what_was_said_while_the_channel_was_paused(kernel) -> None:
    await enable(kernel, days=30)
    await kernel.set_channel_state("g1", "c1", "paused", by="admin")
    await asyncio.sleep(0.05)
    await kernel.set_channel_state("g1", "c1", "active", by="admin")
    [span] = await kernel.channels.pause_ranges("g1", "c1")
    during = span.started_at + (span.ended_at - span.started_at) / 2
    data = parse_export(
        export(
            msg("301", "postgres before the pause", days_ago=3),
            msg("302", "postgres while paused", timestamp=during.isoformat()),
        )
    )
    report = await run_import(kernel, data, guild_id="g1")
    assert report.imported == 1 and report.skipped == {"while the channel was paused": 1}
    assert await count(kernel, text="paused") == 0 and await count(kernel, text="postgres") == 1


async def stored_counts(kernel) -> dict[str, int]:
    """Rows in the ledger, the mentions and (SQLite) the full-text index."""
    out = {
        "messages": (await rows(kernel, "SELECT COUNT(*) FROM memory_messages"))[0][0],
        "mentions": (await rows(kernel, "SELECT COUNT(*) FROM memory_mentions"))[0][0],
    }
    if kernel.db.dialect == "sqlite":  # the index itself, not its content table
        sql = "SELECT COUNT(*) FROM memory_fts WHERE memory_fts MATCH 'words'"
        out["fts"] = (await rows(kernel, sql))[0][0]
    return out


def test_a_refused_export_leaves_nothing_then_a_good_one_shows_its_progress(
    database_url, tmp_path, monkeypatch
) -> None:
    """The bad message comes after 1,500 good ones (past the importer's batch of 1,000)."""
    monkeypatch.setenv("GIGI_SECRET_KEY", KEY)
    monkeypatch.setenv("GIGI_DATABASE_URL", database_url)
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "memory")

    async def in_kernel(fn):
        async with open_test_kernel(
            tmp_path, plugins=["memory"], database_url=database_url, secret_key=KEY
        ) as k:
            return await fn(k)

    async def prepare(k) -> None:
        await k.enable_plugin("g1", "memory")
        await enable(k)

    asyncio.run(in_kernel(prepare))
    good = [msg(str(i), f"words {i}", mentions=[{"id": "42"}]) for i in range(1, 1501)]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(export(*good, msg("1501", "words", timestamp="soon"))))
    fine = tmp_path / "fine.json"
    fine.write_text(json.dumps(export(*good)))

    @click.group()
    def root() -> None:
        pass

    gigi_memory.register_commands(root)
    runner = CliRunner()
    refused = runner.invoke(root, ["memory", "import", str(bad), "--guild", "g1"])
    assert refused.exit_code == 1 and "$.messages[1500].timestamp" in refused.output
    assert "importing" not in refused.stderr  # refused before any message was looked at
    empty = {"messages": 0, "mentions": 0} | ({"fts": 0} if "sqlite" in database_url else {})
    assert asyncio.run(in_kernel(stored_counts)) == empty

    # stderr as a terminal: the bar draws as it goes (click prints only its label otherwise).
    monkeypatch.setattr("click._termui_impl.isatty", lambda _file: True)
    done = runner.invoke(root, ["memory", "import", str(fine), "--guild", "g1"])
    assert done.exit_code == 0, done.output
    assert done.stdout.strip() == (
        "imported 1500 of 1500 message(s) into channel c1; 0 already remembered"
    )
    frames = done.stderr.split("\r")
    assert frames[-1].strip().startswith("importing") and "100%" in frames[-1]
    assert any(f.startswith("importing") and " 0%" in f for f in frames)  # drawn at the start
    assert len([f for f in frames if "%" in f]) > 2  # and in between
    full = {"messages": 1500, "mentions": 1500} | (
        {"fts": 1500} if "sqlite" in database_url else {}
    )
    assert asyncio.run(in_kernel(stored_counts)) == full


async def test_an_import_past_one_batch_finishes(kernel) -> None:
    """The importer flushes after each 1,000 and queues the rest at once, as the writer goes
    idle; on PostgreSQL that wake-up was lost (the writer was returning its connection) and
    the import waited for ever."""
    from gigi_memory.ingest import importer

    await enable(kernel, days=30)
    n = importer.BATCH + 7
    data = parse_export(export(*(msg(str(i), f"batch words {i}") for i in range(1, n + 1))))
    for _ in range(3):
        report = await asyncio.wait_for(run_import(kernel, data, guild_id="g1"), 30)
    assert report.already == n and await count(kernel, text="batch") == n
