"""The audit read port and `gigi audit list`: filters, keyset pages, metadata only."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner

from gigi_core import AuditFilter, ConfigError, query_audit
from gigi_core.cli import cli
from gigi_core.cli.common import CliState
from gigi_core.store.audit import AuditRecord


async def _seed(kernel) -> None:
    for i in range(7):
        await kernel.audit.record(
            AuditRecord(
                kind="tool.call",
                status="ok" if i % 2 == 0 else "error",
                actor_id=f"u{i % 3}",
                guild_id="g1",
                action="dice.roll",
                decision="allow",
            )
        )
    await kernel.audit.record(
        AuditRecord(kind="grant.add", status="ok", actor_id="u0", guild_id="g2")
    )


async def test_filters_and_pages(kernel) -> None:
    await _seed(kernel)
    page = await query_audit(kernel.db, AuditFilter(guild_id="g1", limit=3))
    assert [r["guild_id"] for r in page.rows] == ["g1"] * 3
    ids = [r["id"] for r in page.rows]
    assert ids == sorted(ids, reverse=True)
    seen = list(ids)
    while page.next_before_id is not None:
        page = await query_audit(
            kernel.db, AuditFilter(guild_id="g1", limit=3, before_id=page.next_before_id)
        )
        seen += [r["id"] for r in page.rows]
    assert len(seen) == len(set(seen)) == 7

    errors = await query_audit(kernel.db, AuditFilter(guild_id="g1", outcome="error"))
    assert {r["status"] for r in errors.rows} == {"error"} and len(errors.rows) == 3
    mine = await query_audit(kernel.db, AuditFilter(actor_id="u0"))
    assert {r["guild_id"] for r in mine.rows} == {"g1", "g2"}
    grants = await query_audit(kernel.db, AuditFilter(action="grant.add"))
    assert [r["kind"] for r in grants.rows] == ["grant.add"]
    by_action = await query_audit(kernel.db, AuditFilter(action="dice.roll"))
    assert len(by_action.rows) == 7
    future = datetime.now(UTC) + timedelta(hours=1)
    assert (await query_audit(kernel.db, AuditFilter(since=future))).rows == []
    past = datetime.now(UTC) - timedelta(hours=1)
    assert len((await query_audit(kernel.db, AuditFilter(since=past, limit=500))).rows) == 8
    assert (await query_audit(kernel.db, AuditFilter(until=past))).rows == []
    # Only the log's metadata columns come back.
    assert set(page.rows[0]) <= {
        "id", "created_at", "kind", "status", "actor_id", "guild_id", "channel_id", "action",
        "capability", "decision", "reason_code", "duration_ms", "run_id", "tool_kind",
        "input_tokens", "output_tokens", "termination_reason",
    }  # fmt: skip


def test_a_bad_page_size_names_the_limit() -> None:
    with pytest.raises(ConfigError, match="limit"):
        AuditFilter(limit=0)


def test_cli_lists_and_filters(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GIGI_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "dice")
    runner = CliRunner()

    def gigi(*args: str):
        return runner.invoke(cli, list(args), obj=CliState(), catch_exceptions=False)

    assert (
        gigi("grants", "add", "dice.use", "--guild", "7", "--role", "9", "--by", "42").exit_code
        == 0
    )
    assert gigi("grants", "add", "dice.use", "--guild", "8", "--role", "9").exit_code == 0
    result = gigi("audit", "list", "--guild", "7", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [(r["kind"], r["actor_id"], r["guild_id"]) for r in data["rows"]] == [
        ("grant.add", "42", "7")
    ]
    assert data["next_before"] is None
    text = gigi("audit", "list", "--actor", "42", "--since", "1d")
    assert "grant.add" in text.output and "KIND" in text.output
    paged = gigi("audit", "list", "--limit", "1")
    assert "--before" in paged.output
    bad = runner.invoke(cli, ["audit", "list", "--since", "soon"], obj=CliState())
    assert bad.exit_code != 0 and "--since" in bad.output
    too_many = runner.invoke(cli, ["audit", "list", "--limit", "9999"], obj=CliState())
    assert too_many.exit_code == 2 and "--limit" in too_many.output
