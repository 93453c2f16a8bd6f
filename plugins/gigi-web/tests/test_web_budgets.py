"""The budgets page: every budget's window as `/llm budget show` reads it, set/reset/remove
and the personal-key policy for holders of llm.provider.write, decided by the policy engine."""

from __future__ import annotations

from web_world import ADMIN, ALPHA, EVIL_ROLE, MEMBER

from gigi_core import AuditFilter, query_audit


async def test_budgets_are_listed_set_reset_and_removed(dashboard) -> None:
    kernel = dashboard.kernel
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    empty = await ada.client.get(f"/g/{ALPHA}/budgets")
    assert empty.status_code == 200 and "No budgets" in empty.text
    assert 'href="/g/9001/budgets"' in empty.text  # in the server's navigation

    made = await ada.post(
        f"/g/{ALPHA}/budgets/set",
        {"scope_kind": "guild", "window": "daily", "limit": "200000", "unit": "tokens"},
    )
    assert made.status_code == 303
    role = await ada.post(
        f"/g/{ALPHA}/budgets/set",
        {"scope_kind": "role", "scope_id": "7002", "window": "weekly", "limit": "5000",
         "reset_hour": "6"},
    )  # fmt: skip
    assert role.status_code == 303
    [whole, weekly] = sorted(await kernel.llm.budget_status(ALPHA), key=lambda s: s.budget.window)
    assert (whole.budget.scope_kind, whole.budget.limit) == ("guild", 200_000)
    assert (weekly.budget.scope_id, weekly.budget.reset_hour) == ("7002", 6)
    page = await ada.client.get(f"/g/{ALPHA}/budgets")
    assert "200,000 tokens" in page.text and "The whole server" in page.text
    assert "&lt;img src=x" in page.text and EVIL_ROLE not in page.text  # the role's name
    assert whole.resets_at.strftime("%Y-%m-%d %H:%M") in page.text

    bad = await ada.post(
        f"/g/{ALPHA}/budgets/set", {"scope_kind": "guild", "window": "daily", "limit": "lots"}
    )
    assert bad.status_code == 400 and "not a whole number of tokens" in bad.text
    no_id = await ada.post(
        f"/g/{ALPHA}/budgets/set", {"scope_kind": "member", "window": "daily", "limit": "5"}
    )
    assert no_id.status_code == 400 and "needs an id" in no_id.text
    hour = await ada.post(
        f"/g/{ALPHA}/budgets/set",
        {"scope_kind": "guild", "window": "daily", "limit": "5", "reset_hour": "25"},
    )
    assert hour.status_code == 400 and "Reset hour" in hour.text

    reset = await ada.post(
        f"/g/{ALPHA}/budgets/reset", {"scope_kind": "guild", "scope_id": "", "window": "daily"}
    )
    assert reset.status_code == 303
    removed = await ada.post(
        f"/g/{ALPHA}/budgets/remove", {"scope_kind": "role", "scope_id": "7002", "window": "weekly"}
    )
    assert removed.status_code == 303
    assert [s.budget.scope_kind for s in await kernel.llm.budget_status(ALPHA)] == ["guild"]
    missing = await ada.post(
        f"/g/{ALPHA}/budgets/remove", {"scope_kind": "role", "scope_id": "7002", "window": "weekly"}
    )
    assert missing.status_code == 400
    rows = await query_audit(kernel.db, AuditFilter(guild_id=ALPHA, actor_id=ADMIN))
    kinds = {r["kind"] for r in rows.rows}
    assert {"llm.budget.set", "llm.budget.reset", "llm.budget.remove"} <= kinds


async def test_the_personal_key_policy_form(dashboard) -> None:
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    page = await ada.client.get(f"/g/{ALPHA}/budgets")
    assert "Now: <strong>off</strong>" in page.text
    done = await ada.post(f"/g/{ALPHA}/budgets/personal-keys", {"personal_keys": "dm-only"})
    assert done.status_code == 303
    assert (await dashboard.kernel.llm.policy(ALPHA)).personal_keys == "dm-only"
    after = await ada.client.get(f"/g/{ALPHA}/budgets")
    assert "Now: <strong>dm-only</strong>" in after.text and "only in DMs" in after.text
    bad = await ada.post(f"/g/{ALPHA}/budgets/personal-keys", {"personal_keys": "always"})
    assert bad.status_code == 400 and "off, dm-only, guild-allowed" in bad.text
    assert (await dashboard.kernel.llm.policy(ALPHA)).personal_keys == "dm-only"


async def test_reading_budgets_does_not_let_a_member_change_them(dashboard) -> None:
    kernel = dashboard.kernel
    await kernel.llm.set_budget(ALPHA, "guild", None, limit="1000", window="daily", by=ADMIN)
    bob = dashboard.browser()
    await bob.sign_in(MEMBER)
    assert (await bob.client.get(f"/g/{ALPHA}/budgets")).status_code == 403
    await kernel.add_grant(ALPHA, "llm.usage.read", "user", MEMBER, by=ADMIN)
    page = await bob.client.get(f"/g/{ALPHA}/budgets")
    assert page.status_code == 200 and "1,000 tokens" in page.text
    assert "Set budget" not in page.text and "Save the policy" not in page.text
    for path, data in {
        "budgets/set": {"scope_kind": "guild", "window": "daily", "limit": "9"},
        "budgets/reset": {"scope_kind": "guild", "window": "daily"},
        "budgets/remove": {"scope_kind": "guild", "window": "daily"},
        "budgets/personal-keys": {"personal_keys": "guild-allowed"},
    }.items():
        refused = await bob.post(f"/g/{ALPHA}/{path}", data)
        assert refused.status_code == 403 and "llm.provider.write" in refused.text, path
    [status] = await kernel.llm.budget_status(ALPHA)
    assert status.budget.limit == 1000
    assert (await kernel.llm.policy(ALPHA)).personal_keys == "off"
