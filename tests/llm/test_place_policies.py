"""Per-place (thread, channel, forum, category, guild) and per-role LLM policies: stored on
both backends, inherited from the nearest place, applied by resolution within the guild
owner only, and a role's allowed models held before any provider call (fake OpenAI on
loopback)."""

from __future__ import annotations

import pytest

from gigi_core import Actor
from gigi_core.llm.channel_policy import MAX_PROMPT, Place
from gigi_core.llm.records import LlmConfigError
from gigi_core.testing.fake_providers import FakeOpenAI
from tests.llm.budget_helpers import GUILD, configure, request
from tests.llm.service_helpers import all_values, llm_kernel

THREAD, CHANNEL, CATEGORY = Place("thread", "t1"), Place("channel", "c1"), Place("category", "k1")
CHAIN = (THREAD, CHANNEL, CATEGORY)


async def test_values_inherit_from_the_nearest_place_and_say_where(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel:
        places = kernel.llm.places
        fresh = await places.effective(GUILD, CHAIN)
        assert (fresh.answer.value, fresh.answer.where) == ("mention", "default")
        assert fresh.prompt.value is None and fresh.models == {}

        await places.set_place(GUILD, Place("guild", GUILD), answer="replies", by="boss")
        await places.set_place(GUILD, CATEGORY, prompt="Answer in French.", by="boss")
        await places.set_place(GUILD, CHANNEL, purpose="chat", model="m-small", by="boss")
        await places.set_place(GUILD, THREAD, prompt="Answer in haiku.", by="boss")

        here = await places.effective(GUILD, CHAIN)
        assert (here.prompt.value, here.prompt.where) == ("Answer in haiku.", "thread")
        assert (here.answer.value, here.answer.where) == ("replies", "guild")
        assert here.models["chat"].value.model == "m-small"
        assert here.models["chat"].source == CHANNEL
        # the channel beside the thread: the category's prompt, not the thread's
        beside = await places.effective(GUILD, (CHANNEL, CATEGORY))
        assert (beside.prompt.value, beside.prompt.where) == ("Answer in French.", "category")
        # clearing goes back to inheriting
        await places.set_place(GUILD, THREAD, clear="prompt")
        again = await places.effective(GUILD, CHAIN)
        assert (again.prompt.value, again.prompt.where) == ("Answer in French.", "category")
        # another guild sees none of it
        other = await places.effective("g2", CHAIN)
        assert other.prompt.value is None and other.answer.where == "default"


async def test_bad_settings_are_refused_naming_what_to_change(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel:
        places = kernel.llm.places
        with pytest.raises(LlmConfigError, match="at most 1500 characters"):
            await places.set_place(GUILD, CHANNEL, prompt="x" * (MAX_PROMPT + 1))
        with pytest.raises(LlmConfigError, match="use one of mention, replies, every"):
            await places.set_place(GUILD, CHANNEL, answer="always")
        with pytest.raises(LlmConfigError, match="exactly one of profile or model"):
            await places.set_place(GUILD, CHANNEL, purpose="chat", profile="routing", model="m")
        with pytest.raises(LlmConfigError, match="unknown purpose 'poetry'"):
            await places.set_place(GUILD, CHANNEL, purpose="poetry", model="m")
        with pytest.raises(LlmConfigError, match="nothing to change"):
            await places.set_place(GUILD, CHANNEL)
        with pytest.raises(LlmConfigError, match="ambient plugin is not enabled") as err:
            await places.set_place(GUILD, CHANNEL, answer="every")
        assert "mention or replies" in str(err.value)
        # Each surface's own syntax for the fix.
        assert f"gigi plugins enable ambient --guild {GUILD}" in err.value.text_for("shell")
        assert "`/enable ambient`" in err.value.text_for("console")
        assert "plugin:ambient" in err.value.text_for("discord")
        with pytest.raises(LlmConfigError, match="unknown place kind 'room'"):
            Place.of("room", "1")
        assert (await places.effective(GUILD, (CHANNEL,))).answer.where == "default"


async def test_a_channel_override_picks_the_guild_profile_or_model(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)  # guild g1: chat -> m-1 on key "main"
        llm = kernel.llm
        await llm.set_profile(f"guild:{GUILD}", "reasoning", "main", "m-think")
        assert (await llm.resolve(GUILD, "respond", "u1", places=CHAIN)).model == "m-1"

        await llm.places.set_place(GUILD, CATEGORY, purpose="chat", profile="reasoning")
        moved = await llm.resolve(GUILD, "respond", "u1", places=CHAIN)
        assert (moved.model, moved.owner.type, moved.purpose) == ("m-think", "guild", "reasoning")
        # the cache is keyed by the places: a channel outside the category keeps m-1
        assert (
            await llm.resolve(GUILD, "respond", "u1", places=(Place("channel", "c9"),))
        ).model == "m-1"

        await llm.places.set_place(GUILD, THREAD, purpose="chat", model="m-cheap")
        cheap = await llm.resolve(GUILD, "respond", "u1", places=CHAIN)
        assert (cheap.model, cheap.credential_label) == ("m-cheap", "main")

        fake.reply_text("ok")
        await llm.chat(request(), guild_id=GUILD, actor="u1", channel_id="t1", places=CHAIN)
        assert fake.requests[-1].json["model"] == "m-cheap"


async def test_an_override_never_moves_the_bill_to_another_owner(
    database_url, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("GIGI_TENANT_FALLBACK", "1")
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        llm = kernel.llm
        await llm.add_credential(
            "tenant", "openai-compatible", "t", "sk-t-0123456789", base_url=fake.base_url
        )
        await llm.set_profile("tenant", "chat", "t", "m-tenant")
        assert (await llm.resolve(GUILD, "chat", "u1", places=CHAIN)).owner.type == "tenant"
        await llm.places.set_place(GUILD, CHANNEL, purpose="chat", model="m-x")
        with pytest.raises(LlmConfigError, match="has no chat profile") as err:
            await llm.resolve(GUILD, "chat", "u1", places=CHAIN)
        assert "--clear model" in str(err.value) and "channel:c1" in str(err.value)
        assert fake.requests == []


async def test_a_role_allow_list_refuses_before_the_call(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        llm = kernel.llm
        await llm.places.set_role(GUILD, "r-guest", ["m-small"], by="boss")
        guest = Actor(id="u1", roles=frozenset({"r-guest"}))
        with pytest.raises(LlmConfigError, match="role r-guest allows m-small") as err:
            await llm.chat(request(), guild_id=GUILD, actor=guest, channel_id="c1")
        assert "/llm policy role" in str(err.value) and "--allow m-small,m-1" in str(err.value)
        assert err.value.text_for("console").endswith(
            "`/llm policy role role=r-guest allow=m-small,m-1`)"
        )
        assert fake.requests == []  # refused before any provider call

        fake.reply_text("ok", times=3)
        # a second role that allows it, the purpose name, an admin, no role policy: served
        both = Actor(id="u2", roles=frozenset({"r-guest", "r-staff"}))
        await llm.places.set_role(GUILD, "r-staff", ["chat"])
        await llm.chat(request(), guild_id=GUILD, actor=both, channel_id="c1")
        await llm.chat(
            request(),
            guild_id=GUILD,
            actor=Actor(id="a", roles=frozenset({"r-guest"}), is_admin=True),
        )
        await llm.chat(request(), guild_id=GUILD, actor=Actor(id="u3"), channel_id="c1")
        assert len(fake.requests) == 3
        await llm.places.set_role(GUILD, "r-guest", None)  # lifted
        fake.reply_text("ok")
        await llm.chat(request(), guild_id=GUILD, actor=guest, channel_id="c1")
        with pytest.raises(LlmConfigError, match="1-20 model ids"):
            await llm.places.set_role(GUILD, "r-x", [" "])


async def test_show_lists_roles_with_their_budgets_and_every_source(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel:
        llm = kernel.llm
        await llm.places.set_role(GUILD, "r-1", ["m-1", "m-2"])
        await llm.set_budget(GUILD, "role", "r-1", limit=5000)
        await llm.places.set_place(GUILD, CHANNEL, answer="replies", prompt="Be brief.")
        view = await llm.places.show(GUILD, CHAIN)
        data = view.as_dict()
        assert data["answer"] == {"value": "replies", "from": {"kind": "channel", "id": "c1"}}
        assert data["prompt"]["value"] == "Be brief."
        assert data["roles"] == [{"guild_id": GUILD, "role_id": "r-1", "models": ["m-1", "m-2"]}]
        assert [(b["role_id"], b["limit"]) for b in data["role_budgets"]] == [("r-1", 5000)]
        # the instructions live in their own row only: audit rows hold ids
        values = await all_values(kernel)
        assert {t for t, _c, v in values if "Be brief" in str(v)} == {"llm_place_policies"}
        assert ("audit_events", "kind", "llm.policy.place") in values


async def test_a_purged_guild_loses_its_policies_and_a_deleted_member_their_name(
    database_url, tmp_path
) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel:
        places = kernel.llm.places
        for guild in (GUILD, "g2"):
            await places.set_place(guild, CHANNEL, answer="replies", by="u-admin")
            await places.set_role(guild, "r-1", ["m-1"], by="u-admin")
        await kernel.privacy.purge_guild(GUILD)
        kernel.llm._changed()
        assert (await places.effective(GUILD, (CHANNEL,))).answer.where == "default"
        assert (await places.show(GUILD)).roles == ()
        assert (await places.effective("g2", (CHANNEL,))).answer.where == "channel"
        # who changed a setting is kept as a pseudonym once that member is deleted
        await kernel.privacy.delete("u-admin", "g2")
        values = await all_values(kernel)
        assert not [v for t, _c, v in values if t.startswith("llm_") and v == "u-admin"]
        assert len((await places.show("g2")).roles) == 1
