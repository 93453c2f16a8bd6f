"""Grants on the dashboard: a delegated grants.manage must not widen its holder's rights.

On Discord `/gigi grants` is Manage Server only; the dashboard must not let a member with
only `grants.manage` grant themselves `*` (every capability) or anything else.
"""

from __future__ import annotations

from web_world import ADMIN, ALPHA, MEMBER


async def test_a_grants_manager_reads_grants_but_cannot_change_them(dashboard) -> None:
    kernel = dashboard.kernel
    await kernel.add_grant(ALPHA, "grants.manage", "user", MEMBER, by=ADMIN)
    bob = dashboard.browser()
    await bob.sign_in(MEMBER)
    page = await bob.client.get(f"/g/{ALPHA}/grants")
    assert page.status_code == 200 and "grants.manage" in page.text
    assert "/grants/add" not in page.text  # no forms shown to him
    token = await bob.csrf(f"/g/{ALPHA}/grants")
    for path, capability in (("add", "*"), ("add", "plugins.manage"), ("remove", "grants.manage")):
        r = await bob.post(
            f"/g/{ALPHA}/grants/{path}",
            {"capability": capability, "subject_type": "user", "user": MEMBER},
            csrf=token,
        )
        assert r.status_code == 403 and "Manage Server" in r.text
    rows = {(g.capability, g.subject_id) for g in await kernel.grants.list(ALPHA)}
    assert rows == {("grants.manage", MEMBER)}  # nothing added, nothing removed
    assert (await bob.client.get(f"/g/{ALPHA}/plugins")).status_code == 403


async def test_an_admin_still_adds_and_removes_grants(dashboard) -> None:
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    token = await ada.csrf(f"/g/{ALPHA}/grants")
    form = {"capability": "plugins.manage", "subject_type": "user", "user": MEMBER}
    assert (await ada.post(f"/g/{ALPHA}/grants/add", form, csrf=token)).status_code == 303
    held = {g.capability for g in await dashboard.kernel.grants.list(ALPHA)}
    assert "plugins.manage" in held
    assert (await ada.post(f"/g/{ALPHA}/grants/remove", form, csrf=token)).status_code == 303
    assert await dashboard.kernel.grants.list(ALPHA) == []
