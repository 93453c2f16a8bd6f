"""The canary scanner covers plugin tables without knowing their names: memory's ledger and
full-text index (both backends), a tokenised canary, and an FTS5 index with no content."""

from __future__ import annotations

from pathlib import Path

import pytest

from gigi_core.evalharness import Canaries, run_cases
from gigi_core.evalharness.canary import scan_database

STORED = """\
name: memory-stores-what-it-is-given
description: "A canary in a remembered message is in memory's tables; the scanner must say so."
evalkit: false
transport: none
plugins: [memory]
guild: {enable: {memory: {}}}
setup:
  - call: {action: memory.enable, args: {channel: c1, retention_days: 30}}
  - message: {id: "1", channel: c1, text: "remember ${canary} please"}
request:
  kind: slash
  actor: {id: u1, admin: true}
  call: {action: memory.count, args: {author: u1}}
expect: {status: done, reply_contains: ['"count": 1']}
"""


@pytest.mark.parametrize("database_url", ["sqlite", "postgresql"], indirect=True)
async def test_a_canary_planted_in_a_memory_table_fails_the_case(
    tmp_path: Path, database_url: str
) -> None:
    path = tmp_path / "stored.yaml"
    path.write_text(STORED)
    [result] = await run_cases([path], database_url=database_url)
    assert not result.passed and not result.problems  # only the leak fails it
    source = "canary planted in setup 2 (message 1 in c1) found in"
    wheres = {leak.removeprefix(source).strip() for leak in result.leaks}
    assert all(leak.startswith(source) for leak in result.leaks)
    assert "memory_messages.search_text" in wheres  # tokenised: "canary <hex>"
    if database_url.startswith("sqlite"):
        assert "memory_fts (index terms)" in wheres
    else:
        assert "memory_messages.search_tsv" in wheres


async def test_the_scanner_finds_tokenised_canaries_and_fts5_terms(tmp_path: Path) -> None:
    """A made-up plugin's table holding a normalised copy, and a contentless FTS5 index
    (nothing to SELECT but its terms): both are found, by no name the scanner knows."""
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path / 'scan.db'}")
    canaries = Canaries()
    words = canaries.new("the words").replace("-", " ").upper()
    indexed = canaries.new("the index")
    clean = canaries.new("nowhere")
    async with engine.begin() as conn:
        await conn.execute(text("CREATE TABLE someplugin_notes (id INTEGER, words TEXT)"))
        await conn.execute(
            text("INSERT INTO someplugin_notes VALUES (1, :w)"), {"w": words.lower()}
        )
        await conn.execute(text("CREATE VIRTUAL TABLE someplugin_idx USING fts5(body, content='')"))
        await conn.execute(
            text("INSERT INTO someplugin_idx(rowid, body) VALUES (1, :b)"), {"b": f"x {indexed} y"}
        )
    leaks = {(leak.where, leak.source) for leak in await scan_database(engine, canaries)}
    await engine.dispose()
    assert ("someplugin_notes.words", "the words") in leaks
    assert ("someplugin_idx (index terms)", "the index") in leaks
    assert not any(source == "nowhere" for _, source in leaks)
    assert clean not in str(leaks)
