"""The LLM page: keys are write-only, profiles point a purpose at a key and a model, and
each change needs its own capability, decided by the policy engine."""

from __future__ import annotations

from web_world import ADMIN, ALPHA, MEMBER

from gigi_core import AuditFilter, query_audit

KEY = "sk-test-0123456789abcdef-SECRET"


async def test_keys_are_write_only_and_profiles_choose_models(dashboard, caplog) -> None:
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    page = await ada.client.get(f"/g/{ALPHA}/llm")
    assert page.status_code == 200 and "openai" in page.text
    missing = await ada.post(
        f"/g/{ALPHA}/llm/credentials/add", {"provider": "openai", "label": "main"}
    )
    assert missing.status_code == 400 and "paste the API key" in missing.text
    added = await ada.post(
        f"/g/{ALPHA}/llm/credentials/add",
        {"provider": "openai", "label": "main", "api_key": KEY},
    )
    assert added.status_code == 303
    shown = await ada.client.get(f"/g/{ALPHA}/llm")
    assert KEY not in shown.text and "main" in shown.text and "Stored the key main" in shown.text
    [cred] = await dashboard.kernel.llm.list_credentials(f"guild:{ALPHA}")
    assert cred.label == "main" and cred.provider == "openai"

    chosen = await ada.post(
        f"/g/{ALPHA}/llm/profiles/set",
        {"purpose": "chat", "credential": "main", "model": "gpt-test-mini"},
    )
    assert chosen.status_code == 303
    [profile] = await dashboard.kernel.llm.list_profiles(f"guild:{ALPHA}")
    assert (profile.purpose, profile.model) == ("chat", "gpt-test-mini")
    unknown = await ada.post(
        f"/g/{ALPHA}/llm/profiles/set", {"purpose": "chat", "credential": "nope", "model": "m"}
    )
    assert unknown.status_code == 400 and KEY not in unknown.text

    await ada.post(f"/g/{ALPHA}/llm/profiles/remove", {"purpose": "chat"})
    assert await dashboard.kernel.llm.list_profiles(f"guild:{ALPHA}") == []
    revoked = await ada.post(f"/g/{ALPHA}/llm/credentials/revoke", {"label": "main"})
    assert revoked.status_code == 303
    active = [c for c in await dashboard.kernel.llm.list_credentials(f"guild:{ALPHA}")]
    assert all(c.status != "active" for c in active)
    rows = await query_audit(dashboard.kernel.db, AuditFilter(guild_id=ALPHA))
    assert {"llm.credential.add", "llm.profile.set", "llm.credential.revoke"} <= {
        r["kind"] for r in rows.rows
    }
    assert KEY not in repr(rows) and KEY not in caplog.text


async def test_each_llm_change_needs_its_own_capability(dashboard) -> None:
    await dashboard.kernel.add_grant(ALPHA, "llm.provider.select", "user", MEMBER, by=ADMIN)
    bob = dashboard.browser()
    await bob.sign_in(MEMBER)
    page = await bob.client.get(f"/g/{ALPHA}/llm")
    assert page.status_code == 200 and "Add key" not in page.text  # no write: no form
    refused = await bob.post(
        f"/g/{ALPHA}/llm/credentials/add", {"provider": "openai", "label": "x", "api_key": KEY}
    )
    assert refused.status_code == 403 and "llm.provider.write" in refused.text
    assert await dashboard.kernel.llm.list_credentials(f"guild:{ALPHA}") == []
