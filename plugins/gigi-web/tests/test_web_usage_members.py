"""The usage page's per-member table: top spenders by tokens, shown by rank pseudonym only
(no id, no name), for holders of llm.usage.read."""

from __future__ import annotations

from datetime import UTC, datetime

from web_world import ADMIN, ALPHA, MEMBER

from gigi_core.llm.usage import UsageLog, UsageRecord

EVIL_ID = "<script>alert('who')</script>"


async def _spend(dashboard) -> None:
    log = UsageLog(dashboard.kernel.db)
    spent = [(MEMBER, 500), (ADMIN, 40), (EVIL_ID, 90), (None, 3), (MEMBER, 100)]
    for i, (actor, tokens) in enumerate(spent):
        await log.record(
            UsageRecord(
                request_id=f"r{i}", provider="openai", model="m", purpose="chat",
                billing_owner_type="guild", billing_owner_id=ALPHA, status="ok", guild_id=ALPHA,
                actor_id=actor, input_tokens=tokens, output_tokens=2,
                created_at=datetime.now(UTC),
            )
        )  # fmt: skip


async def test_members_by_spend_under_pseudonyms(dashboard) -> None:
    await _spend(dashboard)
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    usage = await ada.client.get(f"/g/{ALPHA}/usage", params={"days": "7"})
    assert f'href="/g/{ALPHA}/usage/members?days=7"' in usage.text
    page = await ada.client.get(f"/g/{ALPHA}/usage/members", params={"days": "7"})
    assert page.status_code == 200
    table = page.text.split("Top members by tokens", 1)[1]
    ranks = [line for line in table.splitlines() if line.startswith("<tr><th")]
    assert ranks[0].startswith('<tr><th scope="row">member #1</th><td>2</td><td>600</td>')
    assert ranks[1].startswith('<tr><th scope="row">member #2</th><td>1</td><td>90</td>')
    assert ranks[2].startswith('<tr><th scope="row">member #3</th><td>1</td><td>40</td>')
    assert "no member (plugins" in ranks[3]
    for secret in (MEMBER, ADMIN, "bob", "script"):  # neither ids nor names nor the raw text
        assert secret not in table


async def test_members_need_usage_read(dashboard) -> None:
    await _spend(dashboard)
    bob = dashboard.browser()
    await bob.sign_in(MEMBER)
    refused = await bob.client.get(f"/g/{ALPHA}/usage/members")
    assert refused.status_code == 403 and "llm.usage.read" in refused.text
    assert "member #1" not in refused.text
    bad = await bob.client.get(f"/g/{ALPHA}/usage/members", params={"days": "²"})
    assert bad.status_code == 403  # the capability comes first
