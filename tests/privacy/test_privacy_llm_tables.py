"""The LLM tables beyond keys and profiles in privacy export, delete and guild purge:
failover lists, model listings, budgets with their counters, and who changed a place or
role policy, a budget or a failover list. Both backends."""

from __future__ import annotations

import json
import time
from typing import Any

from sqlalchemy import select

from gigi_core.llm.channel_policy import Place
from gigi_core.llm.provider import ModelInfo
from gigi_core.store.budget_tables import LlmBudget, LlmBudgetLease, LlmBudgetWindow
from gigi_core.store.catalogue_tables import LlmModelCatalogue
from gigi_core.store.failover_tables import LlmFailover
from gigi_core.store.llm_policy_tables import LlmPlacePolicy, LlmRolePolicy
from tests.llm.service_helpers import GUILD_KEY, USER_KEY, all_values, contains
from tests.privacy.plugins import OTHER, USER

PROMPT = "Be brief, the channel instructions ZEBRA-7"


async def _seed(kernel: Any) -> None:
    """g1 and g2 each: a guild key with a failover list, a place and a role policy and
    budgets the member set; a budget naming the member and counters of theirs and of
    another member. The member's own key has a failover list too; every key a listing."""
    llm = kernel.llm
    await kernel.llm.personal.add(USER, "openai", "mine", USER_KEY, model="gpt-mine")
    await llm.set_failover(f"user:{USER}", "chat", "mine:gpt-mine-2", by=USER)
    for guild in ("g1", "g2"):
        owner = f"guild:{guild}"
        await llm.add_credential(owner, "openai", "main", GUILD_KEY, by="boss")
        await llm.set_failover(owner, "chat", "main:gpt-x", by=USER)
        await llm.places.set_place(guild, Place("channel", "c1"), prompt=PROMPT, by=USER)
        await llm.places.set_role(guild, "r1", ["gpt-x"], by=USER)
        await llm.set_budget(guild, "guild", None, limit=9000, by=USER)
        await llm.set_budget(guild, "member", USER, limit=100, by="boss")
        every = await llm.set_budget(guild, "member", "*", limit=500, by="boss")
        async with kernel.db.session() as s:
            for subject in (USER, OTHER):
                s.add(LlmBudgetWindow(budget_id=every.id, subject=subject, starts=0, spent=7))
                s.add(
                    LlmBudgetLease(
                        budget_id=every.id, subject=subject, starts=0, holder="h", expires=1
                    )
                )
    listing = (ModelInfo(id="gpt-x"), ModelInfo(id="gpt-y"))
    for cred in await llm.list_credentials():
        await llm.catalogue_store.write(cred.id, "fp", "openai", listing, time.time())


async def _rows(kernel: Any, table: Any) -> list[Any]:
    async with kernel.db.session() as s:
        return list((await s.scalars(select(table))).all())


async def _llm_values(kernel: Any, needle: str) -> list[tuple[str, str]]:
    """(table, column) of every LLM table cell still holding ``needle``."""
    return [
        (t, c)
        for t, c, v in await all_values(kernel)
        if t.startswith("llm_") and t != "llm_usage_events" and contains(v, needle)
    ]


async def _owners(kernel: Any, table: Any) -> set[str]:
    """Owners of a table's rows, by what the table keys them on."""
    rows = await _rows(kernel, table)
    if table is LlmFailover:
        return {f"{r.owner_type}:{r.owner_id}" for r in rows}
    creds = {c.id: str(c.owner) for c in await _all_credentials(kernel)}
    return {creds.get(r.credential_id, "gone") for r in rows}


async def _all_credentials(kernel: Any) -> list[Any]:
    return await kernel.llm.list_credentials(include_revoked=True)


async def test_export_lists_what_the_llm_tables_hold_about_the_member(env) -> None:
    kernel, _ = env
    await _seed(kernel)
    mine = (await kernel.privacy.export(USER))["kernel"]
    assert mine["llm_failover"] == [
        {
            "purpose": "chat",
            "models": ["gpt-mine-2"],
            "on_errors": mine["llm_failover"][0]["on_errors"],
            "updated_at": mine["llm_failover"][0]["updated_at"],
        }
    ]
    assert [(m["label"], m["models"]) for m in mine["llm_model_listings"]] == [("mine", 2)]
    assert sorted((b["guild_id"], b["limit"]) for b in mine["llm_budgets"]) == [
        ("g1", 100),
        ("g2", 100),
    ]
    assert sorted((w["guild_id"], w["spent"]) for w in mine["llm_budget_windows"]) == [
        ("g1", 7),
        ("g2", 7),
    ]
    changed = sorted((c["table"], c["guild_id"]) for c in mine["llm_settings_changed"])
    assert changed == sorted(
        (table, guild)
        for guild in ("g1", "g2")
        for table in ("llm_budgets", "llm_failover", "llm_place_policies", "llm_role_policies")
    )
    one = (await kernel.privacy.export(USER, "g2"))["kernel"]
    assert {c["guild_id"] for c in one["llm_settings_changed"]} == {"g2"}
    assert [b["guild_id"] for b in one["llm_budgets"]] == ["g2"]
    text = json.dumps(mine)
    assert USER_KEY not in text and GUILD_KEY not in text  # metadata only
    assert PROMPT not in text and OTHER not in text


async def test_the_everywhere_delete_leaves_no_member_id_in_the_llm_tables(env) -> None:
    kernel, _ = env
    await _seed(kernel)
    alias = kernel.privacy.pseudonym(USER)
    counts = (await kernel.privacy.delete(USER))["kernel"]
    assert counts["llm_failover"] == 1 and counts["llm_model_listings"] == 1
    assert counts["llm_budgets"] == 2 and counts["llm_budget_windows"] == 2
    assert await _llm_values(kernel, USER) == []
    # the member's own list and listing went with their key; the guilds' stay
    assert await _owners(kernel, LlmFailover) == {"guild:g1", "guild:g2"}
    assert await _owners(kernel, LlmModelCatalogue) == {"guild:g1", "guild:g2"}
    # what they changed stays, attributed to the pseudonym
    for table in (LlmFailover, LlmPlacePolicy, LlmRolePolicy):
        assert {r.updated_by for r in await _rows(kernel, table)} == {alias}
    budgets = await _rows(kernel, LlmBudget)
    assert sorted((b.scope_id, b.updated_by) for b in budgets) == sorted(
        [("", alias), ("*", "boss")] * 2
    )
    # another member's counters stay
    assert {w.subject for w in await _rows(kernel, LlmBudgetWindow)} == {OTHER}
    assert {w.subject for w in await _rows(kernel, LlmBudgetLease)} == {OTHER}


async def test_a_guild_scoped_delete_touches_that_guild_only(env) -> None:
    kernel, _ = env
    await _seed(kernel)
    alias = kernel.privacy.pseudonym(USER)
    counts = (await kernel.privacy.delete(USER, "g1"))["kernel"]
    assert counts["llm_budgets"] == 1 and "llm_failover" not in counts
    # their key serves them in every server: its failover list and listing are kept
    assert f"user:{USER}" in await _owners(kernel, LlmFailover)
    assert f"user:{USER}" in await _owners(kernel, LlmModelCatalogue)
    for table in (LlmPlacePolicy, LlmRolePolicy, LlmBudget):
        by = {
            r.guild_id: r.updated_by for r in await _rows(kernel, table) if r.updated_by != "boss"
        }
        assert by == {"g1": alias, "g2": USER}
    failover = {r.owner_id: r.updated_by for r in await _rows(kernel, LlmFailover)}
    assert failover == {"g1": alias, "g2": USER, USER: USER}
    named = [b.guild_id for b in await _rows(kernel, LlmBudget) if b.scope_id == USER]
    assert named == ["g2"]
    windows = await _rows(kernel, LlmBudgetWindow)
    assert sorted(w.subject for w in windows) == sorted([OTHER, OTHER, USER])


async def test_a_guild_purge_removes_its_failover_listings_and_budgets(env) -> None:
    kernel, _ = env
    await _seed(kernel)
    counts = (await kernel.privacy.purge_guild("g1"))["kernel"]
    assert counts["llm_failover"] == 1 and counts["llm_budgets"] == 3
    assert await _owners(kernel, LlmFailover) == {"guild:g2", f"user:{USER}"}
    assert await _owners(kernel, LlmModelCatalogue) == {"guild:g2", f"user:{USER}"}
    g2 = {b.id for b in await _rows(kernel, LlmBudget)}
    assert {b.guild_id for b in await _rows(kernel, LlmBudget)} == {"g2"}
    assert {w.budget_id for w in await _rows(kernel, LlmBudgetWindow)} <= g2
    assert {w.budget_id for w in await _rows(kernel, LlmBudgetLease)} <= g2
    assert len(await _rows(kernel, LlmBudgetWindow)) == 2
    assert await kernel.llm.budget_status("g1") == []  # nothing cached answers for it
