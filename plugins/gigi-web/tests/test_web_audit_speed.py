"""The audit log has the (guild_id, id) index on both backends, which serves the audit
page's keyset query (a server's rows, newest first), and the page pages back through it."""

from __future__ import annotations

from sqlalchemy import inspect
from web_world import ADMIN, ALPHA

from gigi_core import AuditFilter, query_audit


async def test_the_audit_log_has_a_guild_and_id_index(dashboard) -> None:
    async with dashboard.kernel.db.engine.connect() as conn:
        indexes = await conn.run_sync(lambda c: inspect(c).get_indexes("audit_events"))
    columns = {tuple(ix["column_names"]) for ix in indexes}
    assert ("guild_id", "id") in columns


async def test_the_audit_page_pages_back_through_a_server_newest_first(dashboard) -> None:
    kernel = dashboard.kernel
    for i in range(60):
        await kernel.add_grant(ALPHA, "audit.read", "user", str(5000 + i), by=ADMIN)
    await kernel.add_grant("9999", "audit.read", "user", "77", by=ADMIN)  # another server
    first = await query_audit(kernel.db, AuditFilter(guild_id=ALPHA, limit=50))
    assert len(first.rows) == 50 and first.next_before_id is not None
    rest = await query_audit(
        kernel.db, AuditFilter(guild_id=ALPHA, limit=50, before_id=first.next_before_id)
    )
    ids = [r["id"] for r in first.rows + rest.rows]
    assert ids == sorted(ids, reverse=True) and len(ids) == 60
    assert {r["guild_id"] for r in first.rows + rest.rows} == {ALPHA}
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    page = await ada.client.get(f"/g/{ALPHA}/audit")
    assert page.status_code == 200 and f"before={first.next_before_id}" in page.text
