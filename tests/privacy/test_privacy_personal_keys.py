"""A member's personal-key data in privacy export and delete (issue 30): their keys (by
label and fingerprint, never the key), billing choices and disclosure acknowledgements
per guild; a guild-scoped delete removes that guild's, a guild purge removes everyone's
there. Both backends."""

from __future__ import annotations

import json

from tests.llm.service_helpers import USER_KEY
from tests.privacy.plugins import OTHER, USER


async def _choices(kernel) -> None:
    personal = kernel.llm.personal
    await personal.add(USER, "openai", "mine", USER_KEY, model="gpt-test")
    for guild in ("g1", "g2"):
        await personal.remember_billing(guild, USER, "me")
        await personal.acknowledge(guild, USER)
    await personal.remember_billing("g1", OTHER, "server")
    await personal.acknowledge("g1", OTHER)


async def test_export_holds_keys_choices_and_disclosures(env) -> None:
    kernel, _ = env
    await _choices(kernel)
    mine = (await kernel.privacy.export(USER))["kernel"]
    assert [c["label"] for c in mine["llm_credentials"]] == ["mine"]
    assert sorted((c["guild_id"], c["billing"]) for c in mine["llm_billing_choices"]) == [
        ("g1", "me"),
        ("g2", "me"),
    ]
    assert sorted(d["guild_id"] for d in mine["llm_context_disclosures"]) == ["g1", "g2"]
    assert all(d["acknowledged_at"] for d in mine["llm_context_disclosures"])
    one = (await kernel.privacy.export(USER, "g2"))["kernel"]
    assert [c["guild_id"] for c in one["llm_billing_choices"]] == ["g2"]
    assert [d["guild_id"] for d in one["llm_context_disclosures"]] == ["g2"]
    text = json.dumps(mine)
    assert USER_KEY not in text and OTHER not in text


async def test_delete_removes_them_per_guild_and_everywhere(env) -> None:
    kernel, _ = env
    await _choices(kernel)
    personal = kernel.llm.personal
    counts = (await kernel.privacy.delete(USER, "g1"))["kernel"]
    assert counts["llm_billing_choices"] == 1 and counts["llm_context_disclosures"] == 1
    assert await personal.billing("g1", USER) is None
    assert not await personal.acknowledged("g1", USER)
    assert await personal.billing("g2", USER) == "me"  # another guild's stay
    assert await personal.billing("g1", OTHER) == "server"  # another member's stay

    everywhere = (await kernel.privacy.delete(USER))["kernel"]
    assert everywhere["llm_credentials"] == 1 and everywhere["llm_billing_choices"] == 1
    assert everywhere["llm_context_disclosures"] == 1
    assert await personal.keys(USER) == []
    assert await personal.guilds_acknowledged(USER) == []


async def test_a_guild_purge_removes_everyones_choices_there(env) -> None:
    kernel, _ = env
    await _choices(kernel)
    await kernel.privacy.purge_guild("g1")
    personal = kernel.llm.personal
    assert await personal.billing("g1", OTHER) is None
    assert not await personal.acknowledged("g1", OTHER)
    assert await personal.billing("g2", USER) == "me"
