"""Each server page does what its command does, through the kernel: plugins, settings,
grants, the audit log, usage plots and a member's own data."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from web_world import ADMIN, ALPHA, MEMBER

from gigi_core import AuditFilter, query_audit
from gigi_core.llm.usage import UsageLog, UsageRecord

SECRET = "sk-very-secret-value-123"


async def _admin(dashboard):
    browser = dashboard.browser()
    await browser.sign_in(ADMIN)
    return browser


async def test_enable_shows_what_the_plugin_does_first_then_enables(dashboard) -> None:
    browser = await _admin(dashboard)
    listing = await browser.client.get(f"/g/{ALPHA}/plugins")
    assert listing.status_code == 200 and "webnotes" in listing.text
    review = await browser.client.get(f"/g/{ALPHA}/plugins/webnotes/enable")
    assert "webnotes.wipe" in review.text and "destructive" in review.text
    assert "webnotes.use" in review.text and "What it keeps" in review.text
    assert "webnotes" not in await dashboard.kernel.plugin_state.enabled_plugins(ALPHA)

    done = await browser.post(f"/g/{ALPHA}/plugins/webnotes/enable", {})
    assert done.status_code == 303
    assert "webnotes" in await dashboard.kernel.plugin_state.enabled_plugins(ALPHA)
    after = await browser.client.get(done.headers["location"])
    assert "Enabled webnotes." in after.text and "Disable webnotes" in after.text
    page = await query_audit(dashboard.kernel.db, AuditFilter(guild_id=ALPHA))
    assert (page.rows[0]["kind"], page.rows[0]["actor_id"]) == ("plugin.enable", ADMIN)

    await browser.post(f"/g/{ALPHA}/plugins/webnotes/disable", {})
    assert "webnotes" not in await dashboard.kernel.plugin_state.enabled_plugins(ALPHA)
    unknown = await browser.client.get(f"/g/{ALPHA}/plugins/nope/enable")
    assert unknown.status_code == 404 and "pick one from the list" in unknown.text


async def test_the_dashboard_itself_is_listed_for_the_whole_bot_not_per_server(dashboard) -> None:
    browser = await _admin(dashboard)
    listing = await browser.client.get(f"/g/{ALPHA}/plugins")
    whole_bot = listing.text.split("<h2>For the whole bot</h2>")[1]
    assert 'id="plugin-web"' in whole_bot and "keyed by a hash of the" in whole_bot
    assert "/plugins/web/enable" not in listing.text and "/plugins/webnotes/enable" in listing.text
    assert (await browser.client.get(f"/g/{ALPHA}/plugins/web/enable")).status_code == 404
    refused = await browser.post(f"/g/{ALPHA}/plugins/web/enable", {})
    assert refused.status_code == 404
    assert "web" not in await dashboard.kernel.plugin_state.enabled_plugins(ALPHA)


async def test_config_form_errors_inline_and_secrets_stay_write_only(dashboard) -> None:
    browser = await _admin(dashboard)
    path = f"/g/{ALPHA}/plugins/webnotes/config"
    form = await browser.client.get(path)
    for label in ("Units", "API key", "greeting", "style", "loud"):
        assert label in form.text
    assert 'type="password"' in form.text

    bad = await browser.post(path, {"units": "99", "style": "plain", "api_key": SECRET})
    assert bad.status_code == 400
    assert 'id="e-units"' in bad.text and "maximum" in bad.text
    assert SECRET not in bad.text
    assert await dashboard.kernel.plugin_state.get(ALPHA, "webnotes") is None

    not_a_number = await browser.post(path, {"units": "ten", "api_key": SECRET})
    assert "Enter a whole number" in not_a_number.text and SECRET not in not_a_number.text
    short = await browser.post(path, {"units": "3", "api_key": "short"})
    assert (
        'id="e-api_key"' in short.text
        and "short" not in short.text.split('id="e-api_key"')[1][:200]
    )

    ok = await browser.post(path, {"units": "3", "style": "fancy", "api_key": SECRET, "loud": "on"})
    assert ok.status_code == 303
    config = await dashboard.kernel.plugin_config(ALPHA, "webnotes")
    assert config == {"units": 3, "style": "fancy", "loud": True, "api_key": SECRET}
    shown = await browser.client.get(path)
    assert SECRET not in shown.text and "a value is stored" in shown.text
    assert 'value="3"' in shown.text and "Settings saved." in shown.text

    kept = await browser.post(path, {"units": "4", "style": "plain", "api_key": ""})
    assert kept.status_code == 303
    config = await dashboard.kernel.plugin_config(ALPHA, "webnotes")
    assert config["units"] == 4 and config["api_key"] == SECRET


async def test_grants_add_and_remove(dashboard) -> None:
    browser = await _admin(dashboard)
    page = await browser.client.get(f"/g/{ALPHA}/grants")
    assert "Mods" in page.text and "audit.read" in page.text
    added = await browser.post(
        f"/g/{ALPHA}/grants/add",
        {"capability": "audit.read", "subject_type": "role", "role": "7001"},
    )
    assert added.status_code == 303
    grants = await dashboard.kernel.grants.list(ALPHA)
    assert [(g.capability, g.subject_type, g.subject_id) for g in grants] == [
        ("audit.read", "role", "7001")
    ]
    member = await browser.post(
        f"/g/{ALPHA}/grants/add",
        {"capability": "llm.usage.read", "subject_type": "user", "user": MEMBER},
    )
    assert member.status_code == 303
    bad = await browser.post(
        f"/g/{ALPHA}/grants/add", {"capability": "no.such", "subject_type": "user", "user": "5"}
    )
    assert bad.status_code == 400 and "unknown capability" in bad.text
    not_id = await browser.post(
        f"/g/{ALPHA}/grants/add", {"capability": "audit.read", "subject_type": "user", "user": "x"}
    )
    assert not_id.status_code == 400 and "user id (digits only)" in not_id.text
    removed = await browser.post(
        f"/g/{ALPHA}/grants/remove",
        {"capability": "audit.read", "subject_type": "role", "role": "7001"},
    )
    assert removed.status_code == 303
    assert [g.capability for g in await dashboard.kernel.grants.list(ALPHA)] == ["llm.usage.read"]
    page = await query_audit(
        dashboard.kernel.db, AuditFilter(guild_id=ALPHA, action="grant.remove")
    )
    assert page.rows and page.rows[0]["actor_id"] == ADMIN


async def test_audit_page_filters(dashboard) -> None:
    browser = await _admin(dashboard)
    await dashboard.kernel.add_grant(ALPHA, "audit.read", "role", "7001", by="42")
    await dashboard.kernel.enable_plugin(ALPHA, "webnotes", by="43")
    every = await browser.client.get(f"/g/{ALPHA}/audit")
    assert "grant.add" in every.text and "plugin.enable" in every.text
    only = await browser.client.get(f"/g/{ALPHA}/audit", params={"actor": "42"})
    assert "grant.add" in only.text and "plugin.enable" not in only.text
    kind = await browser.client.get(f"/g/{ALPHA}/audit", params={"action": "plugin.enable"})
    assert "grant.add" not in kind.text and "plugin.enable" in kind.text
    bad = await browser.client.get(f"/g/{ALPHA}/audit", params={"since": "whenever"})
    assert "Since: use e.g. 7d" in bad.text


async def test_usage_plot_from_the_rollups(dashboard) -> None:
    browser = await _admin(dashboard)
    log = UsageLog(dashboard.kernel.db)
    for i, model in enumerate(["gpt-small", "gpt-small", "<b>evil-model</b>"]):
        await log.record(
            UsageRecord(
                request_id=f"r{i}", provider="openai", model=model, purpose="chat",
                billing_owner_type="guild", billing_owner_id=ALPHA, status="ok",
                guild_id=ALPHA, input_tokens=100, output_tokens=7,
                created_at=datetime.now(UTC),
            )
        )  # fmt: skip
    page = await browser.client.get(f"/g/{ALPHA}/usage")
    assert page.status_code == 200 and "<svg" in page.text and "<rect" in page.text
    assert "gpt-small" in page.text and "<b>evil-model</b>" not in page.text
    assert "&lt;b&gt;evil-model&lt;/b&gt;" in page.text
    tokens = await browser.client.get(
        f"/g/{ALPHA}/usage", params={"by": "purpose", "measure": "input_tokens", "days": "7"}
    )
    assert "Input tokens per day by purpose, last 7 days" in tokens.text and "300" in tokens.text


async def test_my_data_export_and_delete(dashboard) -> None:
    browser = dashboard.browser()
    await browser.sign_in(MEMBER)
    await dashboard.kernel.add_grant(ALPHA, "audit.read", "user", MEMBER, by=ADMIN)
    page = await browser.client.get(f"/g/{ALPHA}/data")
    assert page.status_code == 200 and "Export my data" in page.text
    exported = await browser.client.get(f"/g/{ALPHA}/data/export")
    assert exported.headers["content-disposition"].startswith("attachment;")
    data = json.loads(exported.text)
    assert data["user_id"] == MEMBER and data["guild_id"] == ALPHA
    confirm = await browser.client.get(f"/g/{ALPHA}/data/delete")
    assert "Type" in confirm.text
    refused = await browser.post(f"/g/{ALPHA}/data/delete", {"confirm": "no"})
    assert refused.status_code == 400
    assert len(await dashboard.kernel.grants.list(ALPHA)) == 1
    deleted = await browser.post(f"/g/{ALPHA}/data/delete", {"confirm": "delete"})
    assert deleted.status_code == 200 and "Deleted" in deleted.text
    assert await dashboard.kernel.grants.list(ALPHA) == []  # the grant naming bob is gone


async def test_channel_states_pause_resume_and_secure_with_confirmation(dashboard) -> None:
    browser = await _admin(dashboard)
    page = await browser.client.get(f"/g/{ALPHA}/channels")
    assert page.status_code == 200 and "active" in page.text
    paused = await browser.post(f"/g/{ALPHA}/channels/set", {"channel": "8001", "state": "paused"})
    assert paused.status_code == 303
    assert await dashboard.kernel.channels.get(ALPHA, "8001") == "paused"
    unconfirmed = await browser.post(
        f"/g/{ALPHA}/channels/set", {"channel": "8001", "state": "secure"}
    )
    assert unconfirmed.status_code == 400 and "I understand" in unconfirmed.text
    assert await dashboard.kernel.channels.get(ALPHA, "8001") == "paused"
    secured = await browser.post(
        f"/g/{ALPHA}/channels/set", {"channel": "8001", "state": "secure", "confirm": "on"}
    )
    assert secured.status_code == 303
    assert await dashboard.kernel.channels.get(ALPHA, "8001") == "secure"
    other = await browser.post(f"/g/{ALPHA}/channels/set", {"channel": "4242", "state": "paused"})
    assert other.status_code == 404  # not a channel of this server
    rows = await query_audit(
        dashboard.kernel.db, AuditFilter(guild_id=ALPHA, action="channel.state")
    )
    assert [r["status"] for r in rows.rows] == ["secure", "paused"]
    assert {r["actor_id"] for r in rows.rows} == {ADMIN}
