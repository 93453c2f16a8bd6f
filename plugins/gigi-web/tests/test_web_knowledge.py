"""The knowledge page: a channel's recorded decisions and actions, read through the
knowledge plugin's own actions as the member, only where the plugin is enabled."""

from __future__ import annotations

import time
import uuid

import pytest
from gigi_knowledge import tables
from gigi_knowledge.service import ready
from web_world import ADMIN, ALPHA, MEMBER

from gigi_core import AuditFilter, query_audit

pytestmark = pytest.mark.parametrize("dashboard", [{"plugins": ["knowledge"]}], indirect=True)
EVIL_DECISION = "Ship it <script>alert('decision')</script>"
EVIL_ACTION = "Write <img src=x onerror=alert('action')> docs"


async def _seed(kernel, channel_id: str) -> None:
    """Rows as the extraction pipeline writes them (its model is out of this test's scope)."""
    svc = await ready(kernel)
    now = int(time.time() * 1000)
    async with svc.engine.begin() as conn:
        await conn.execute(
            tables.decisions.insert().values(
                id=str(uuid.uuid4()), guild_id=ALPHA, channel_id=channel_id,
                summary=EVIL_DECISION, rationale=None, decided_by=["1002"], asserted_by=["1002"],
                decided_ms=now, confidence=0.9, status="active", superseded_by=None, tags=[],
                source_ref={}, created_ms=now,
            )
        )  # fmt: skip
        await conn.execute(
            tables.actions.insert().values(
                id=str(uuid.uuid4()), guild_id=ALPHA, channel_id=channel_id,
                description=EVIL_ACTION, owner_id="1002", owner_name="bob", deadline_ms=None,
                status="open", staleness_ms=None, confidence=0.8, tags=[], source_ref={},
                related_decision=None, asserted_by=["1002"], created_ms=now,
            )
        )  # fmt: skip


async def test_decisions_and_actions_of_a_channel(dashboard) -> None:
    kernel = dashboard.kernel
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    off = await ada.client.get(f"/g/{ALPHA}/knowledge")
    assert off.status_code == 404 and "enable it on the Plugins page" in off.text
    await kernel.enable_plugin(ALPHA, "knowledge", by=ADMIN)
    await _seed(kernel, "8001")
    picker = await ada.client.get(f"/g/{ALPHA}/knowledge")
    assert picker.status_code == 200 and f'href="/g/{ALPHA}/knowledge"' in picker.text
    assert "#&lt;script&gt;" in picker.text and "No decisions" not in picker.text
    page = await ada.client.get(f"/g/{ALPHA}/knowledge", params={"channel": "8001"})
    assert page.status_code == 200
    assert "Ship it &lt;script&gt;" in page.text and EVIL_DECISION not in page.text
    assert "Write &lt;img src=x" in page.text and EVIL_ACTION not in page.text
    assert "1 decisions" in page.text and "(1 open)" in page.text
    elsewhere = await ada.client.get(f"/g/{ALPHA}/knowledge", params={"channel": "4242"})
    assert elsewhere.status_code == 404
    rows = await query_audit(kernel.db, AuditFilter(guild_id=ALPHA, actor_id=ADMIN))
    read = {r["action"] for r in rows.rows if r["kind"] == "tool.call"}
    assert {"knowledge.status", "knowledge.decisions", "knowledge.actions"} <= read


async def test_knowledge_needs_knowledge_manage(dashboard) -> None:
    kernel = dashboard.kernel
    await kernel.enable_plugin(ALPHA, "knowledge", by=ADMIN)
    await _seed(kernel, "8001")
    bob = dashboard.browser()
    await bob.sign_in(MEMBER)
    refused = await bob.client.get(f"/g/{ALPHA}/knowledge", params={"channel": "8001"})
    assert refused.status_code == 403 and "knowledge.manage" in refused.text
    assert "Ship it" not in refused.text
