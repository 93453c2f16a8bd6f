"""gigi memory import at its edges: another guild's or channel's export, forged times and
lengths, and the author names read for later use (issue 28)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import click
import gigi_memory
import pytest
from click.testing import CliRunner
from gigi_memory.ingest import importer
from gigi_memory.ingest.importer import ExportError, parse_export, run_import
from memory_helpers import count, dump_text, enable, rows

from gigi_core.testing import open_test_kernel

KEY = "a" * 43


def export(*messages: dict, guild: str = "g1", channel: str = "c1") -> dict:
    return {
        "guild": {"id": guild, "name": "Guild"},
        "channel": {"id": channel, "type": "GuildTextChat", "name": "general"},
        "messages": list(messages),
    }


def msg(mid: str, content: str, *, when: datetime | None = None, **extra: Any) -> dict:
    when = when or datetime.now(UTC) - timedelta(days=1)
    return {
        "id": mid,
        "type": "Default",
        "timestamp": when.isoformat(),
        "timestampEdited": None,
        "content": content,
        "author": {"id": "u1", "name": "someone", "isBot": False},
        "mentions": [],
        **extra,
    }


@pytest.fixture
def cli_env(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A memory-enabled guild g1 (channels c1 and c9 remembered) and ``gigi memory`` to run."""
    monkeypatch.setenv("GIGI_SECRET_KEY", KEY)
    monkeypatch.setenv("GIGI_DATABASE_URL", database_url)
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "memory")

    async def in_kernel(fn: Any) -> Any:
        async with open_test_kernel(
            tmp_path, plugins=["memory"], database_url=database_url, secret_key=KEY
        ) as k:
            return await fn(k)

    async def prepare(k: Any) -> None:
        await k.enable_plugin("g1", "memory")
        await enable(k, "c1")
        await enable(k, "c9")

    asyncio.run(in_kernel(prepare))

    @click.group()
    def root() -> None:
        pass

    gigi_memory.register_commands(root)
    runner = CliRunner()

    def gigi(*args: str) -> Any:
        return runner.invoke(root, ["memory", "import", *args])

    gigi.in_kernel = in_kernel  # type: ignore[attr-defined]
    return gigi


async def stored(k: Any) -> list[tuple[str, str, str]]:
    sql = "SELECT guild_id, channel_id, message_id FROM memory_messages ORDER BY message_id"
    return [tuple(r) for r in await rows(k, sql)]


def test_an_export_of_another_guild_is_refused_unless_the_operator_means_it(
    cli_env, tmp_path
) -> None:
    other = tmp_path / "other-guild.json"
    other.write_text(json.dumps(export(msg("1", "from guild two"), guild="g2")))
    refused = cli_env(str(other), "--guild", "g1")
    assert refused.exit_code == 2, refused.output
    assert str(other) in refused.output
    assert "guild g2" in refused.output and "g1" in refused.output
    assert "--allow-other-guild" in refused.output and "nothing was imported" in refused.output
    assert asyncio.run(cli_env.in_kernel(stored)) == []

    done = cli_env(str(other), "--guild", "g1", "--allow-other-guild")
    assert done.exit_code == 0, done.output
    assert asyncio.run(cli_env.in_kernel(stored)) == [("g1", "c1", "1")]


def test_an_export_of_another_channel_is_refused_unless_the_operator_means_it(
    cli_env, tmp_path
) -> None:
    path = tmp_path / "c1.json"
    path.write_text(json.dumps(export(msg("1", "said in c1"))))
    refused = cli_env(str(path), "--guild", "g1", "--channel", "c9")
    assert refused.exit_code == 2, refused.output
    assert str(path) in refused.output and "channel c1" in refused.output
    assert "c9" in refused.output and "--allow-other-channel" in refused.output
    assert asyncio.run(cli_env.in_kernel(stored)) == []

    same = cli_env(str(path), "--guild", "g1", "--channel", "c1")  # naming its own: fine
    assert same.exit_code == 0, same.output
    moved = tmp_path / "moved.json"
    moved.write_text(json.dumps(export(msg("2", "moved here"))))
    done = cli_env(str(moved), "--guild", "g1", "--channel", "c9", "--allow-other-channel")
    assert done.exit_code == 0, done.output
    assert asyncio.run(cli_env.in_kernel(stored)) == [("g1", "c1", "1"), ("g1", "c9", "2")]


async def test_run_import_itself_refuses_another_guild(kernel) -> None:
    await enable(kernel)
    data = parse_export(export(msg("1", "elsewhere"), guild="g2"))
    with pytest.raises(importer.ExportMismatch, match="guild g2"):
        await run_import(kernel, data, guild_id="g1")
    assert await count(kernel, text="elsewhere") == 0
    report = await run_import(kernel, data, guild_id="g1", allow_other_guild=True)
    assert report.imported == 1


async def test_forged_times_and_lengths_are_skipped_with_a_reason(kernel) -> None:
    await enable(kernel, days=30)
    now = datetime.now(UTC)
    data = parse_export(
        export(
            msg("1", "canaryyear2999", when=datetime(2999, 1, 1, tzinfo=UTC)),
            msg("2", "canaryyear9999", timestamp="9999-12-31T23:59:59+00:00"),
            msg("3", "canarytwodays", when=now + timedelta(days=2)),
            msg("4", "canaryedited", timestampEdited="9999-12-31T23:59:59Z"),
            msg("5", "canarylong " + "x" * 2_000_000),
            msg("6", "y" * (importer.MAX_CONTENT_CHARS + 1)),
            msg("7", "z" * importer.MAX_CONTENT_CHARS),  # exactly at the cap: kept
            msg("8", "clock skew of an hour is fine", when=now + timedelta(hours=1)),
            msg("9", "edited a minute ago", timestampEdited=now.isoformat()),
        )
    )
    report = await run_import(kernel, data, guild_id="g1")
    assert report.imported == 3, report.as_dict()
    assert report.as_dict()["skipped"] == {"future timestamp": 4, "too long": 2}
    text = await dump_text(kernel)
    assert not any(f"canary{w}" in text for w in ("year2999", "year9999", "twodays", "edited"))
    assert "canarylong" not in text
    kept = await rows(kernel, "SELECT message_id FROM memory_messages ORDER BY message_id")
    assert [r[0] for r in kept] == ["7", "8", "9"]


def test_the_cli_summary_names_the_reasons(cli_env, tmp_path) -> None:
    path = tmp_path / "forged.json"
    path.write_text(
        json.dumps(
            export(
                msg("1", "fine"),
                msg("2", "later", timestamp="2999-01-01T00:00:00Z"),
                msg("3", "w" * 5000),
            )
        )
    )
    done = cli_env(str(path), "--guild", "g1")
    assert done.exit_code == 0, done.output
    assert "imported 1 of 3" in done.output
    assert "1 future timestamp" in done.output and "1 too long" in done.output


def author(**fields: Any) -> dict:
    return msg("1", "hi", author={"id": "u1", "isBot": False, **fields})


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"name": "someone", "nickname": "Some One"}, "Some One"),
        ({"name": "someone", "nickname": None}, "someone"),
        ({"name": "someone", "nickname": ""}, "someone"),
        ({"name": "someone"}, "someone"),
        ({}, None),
        ({"nickname": "n" * 500}, "n" * 100),
    ],
)
def test_author_names_are_read_nickname_first_and_capped(fields, expected) -> None:
    [parsed] = parse_export(export(author(**fields))).messages
    assert parsed.author_name == expected


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"nickname": 5}, "$.messages[0].author.nickname"),
        ({"name": []}, "$.messages[0].author.name"),
    ],
)
def test_an_author_name_that_is_not_a_string_names_its_path(fields, path) -> None:
    with pytest.raises(ExportError) as info:
        parse_export(export(author(**fields)))
    assert info.value.path == path
