"""Personal keys (issue 30): a member's own key answers their DMs on a fresh install, is
never a fallback for a guild key (or the reverse), never makes shared embeddings, and never
grants a capability; the billing choice and the disclosure are remembered per guild."""

from __future__ import annotations

import pytest

from gigi_core.llm import ProviderError
from gigi_core.llm.records import LlmConfigError, NothingToResolve, Owner
from gigi_core.policy.actor import Actor
from gigi_core.testing.fake_providers import FakeOpenAI
from tests.llm.service_helpers import GUILD_KEY, USER_KEY, llm_kernel

HI = [{"role": "user", "content": "hi"}]


async def _member_key(llm, url: str, model: str = "u-model", user: str = "u1") -> None:
    await llm.personal.add(user, "openai-compatible", "mine", USER_KEY, base_url=url, model=model)


async def test_a_dm_with_a_personal_key_works_on_a_fresh_install(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI(api_key=USER_KEY) as fake:
        llm = kernel.llm
        # Before the member has a key, a DM has nothing to resolve (no tenant fallback).
        with pytest.raises(NothingToResolve):
            await llm.resolve("dm:u1", "respond", "u1", dm=True)
        await _member_key(llm, fake.base_url)
        fake.reply_text("hello from your key")
        reply = await llm.chat(HI, guild_id="dm:u1", actor="u1", dm=True, purpose="respond")
        assert reply.text == "hello from your key"
        assert fake.requests[0].headers["authorization"] == f"Bearer {USER_KEY}"
        assert fake.requests[0].json["model"] == "u-model"
        [event] = await llm.usage_log.events()
        assert (event["billing_owner_type"], event["billing_owner_id"]) == ("user", "u1")
        # No guild id at all, and billing="me", are the same DM.
        assert (await llm.resolve(None, "chat", "u1", dm=True)).owner == Owner.user("u1")
        me = await llm.resolve("dm:u1", "chat", "u1", dm=True, billing="me")
        assert me.owner == Owner.user("u1")
        # Another member's DM never reaches u1's key.
        with pytest.raises(NothingToResolve):
            await llm.resolve("dm:u2", "chat", "u2", dm=True)
        # A DM-kind request inside a guild still follows that guild's policy (off).
        with pytest.raises(NothingToResolve):
            await llm.resolve("g1", "chat", "u1", dm=True)
        # A mention in a guild scope that merely looks like a DM id is not a DM.
        with pytest.raises(NothingToResolve):
            await llm.resolve("dm:u1", "chat", "u1", dm=False)


async def test_a_failed_personal_key_never_falls_back_to_the_guild(database_url, tmp_path) -> None:
    async with (
        llm_kernel(tmp_path, database_url) as kernel,
        FakeOpenAI(api_key="sk-not-the-members") as member_srv,
        FakeOpenAI(api_key=GUILD_KEY) as guild_srv,
    ):
        llm = kernel.llm
        await _member_key(llm, member_srv.base_url)
        await llm.add_credential(
            "guild:g1", "openai-compatible", "k", GUILD_KEY, base_url=guild_srv.base_url
        )
        await llm.set_profile("guild:g1", "chat", "k", "g-model")
        await llm.set_policy("g1", personal_keys="guild-allowed")
        with pytest.raises(ProviderError) as info:
            await llm.chat(HI, guild_id="g1", actor="u1", billing="me")
        assert info.value.error_class == "auth"
        assert guild_srv.requests == [] and len(member_srv.requests) == 1


async def test_a_failed_guild_key_never_falls_back_to_a_personal_key(
    database_url, tmp_path
) -> None:
    async with (
        llm_kernel(tmp_path, database_url) as kernel,
        FakeOpenAI(api_key=USER_KEY) as member_srv,
        FakeOpenAI(api_key="sk-not-the-guilds") as guild_srv,
    ):
        llm = kernel.llm
        await _member_key(llm, member_srv.base_url)
        await llm.add_credential(
            "guild:g1", "openai-compatible", "k", GUILD_KEY, base_url=guild_srv.base_url
        )
        await llm.set_profile("guild:g1", "chat", "k", "g-model")
        await llm.set_policy("g1", personal_keys="guild-allowed")
        for billing in ("auto", "server"):
            with pytest.raises(ProviderError):
                await llm.chat(HI, guild_id="g1", actor="u1", billing=billing)
        assert member_srv.requests == [] and len(guild_srv.requests) == 2


async def test_shared_embeddings_never_use_a_personal_key(database_url, tmp_path) -> None:
    from gigi_knowledge.vectors import embed as knowledge_embed

    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI(api_key=USER_KEY) as fake:
        llm = kernel.llm
        await _member_key(llm, fake.base_url)
        assert [p.purpose for p in await llm.list_profiles("user:u1")] == ["chat"]
        # Even an embedding profile set on the member's key by hand is never used for them.
        await llm.set_profile("user:u1", "embedding", "mine", "u-embed")
        await llm.set_policy("g1", personal_keys="guild-allowed")
        assert (await llm.resolve("g1", "embedding", "u1")).owner == Owner.user("u1")  # sanity
        with pytest.raises(NothingToResolve):
            await llm.embed(["a fact"], guild_id="g1", actor="u1", billing="server")
        assert await knowledge_embed(kernel, "g1", ["a fact"]) is None
        assert fake.requests == []


async def test_paying_grants_no_capability(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel:
        await _member_key(kernel.llm, "http://127.0.0.1:9/v1")
        await kernel.llm.set_policy("g1", personal_keys="guild-allowed")
        await kernel.llm.personal.remember_billing("g1", "u1", "me")
        member = Actor("u1")
        for capability in ("llm.provider.write", "llm.provider.select", "llm.usage.read"):
            decision = await kernel.policy.capability(member, capability, "g1")
            assert not decision.allowed, capability
        assert (
            await kernel.policy.capability(Actor("u9", is_admin=True), "llm.usage.read", "g1")
        ).allowed


async def test_billing_choice_and_disclosure_are_per_member_and_guild(
    database_url, tmp_path
) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel:
        personal = kernel.llm.personal
        assert await personal.billing("g1", "u1") is None
        assert await personal.remember_billing("g1", "u1", "me") == "me"
        await personal.remember_billing("g1", "u1", "server")
        await personal.remember_billing("g2", "u1", "me")
        assert await personal.billing("g1", "u1") == "server"
        assert await personal.billing("g2", "u1") == "me"
        assert await personal.billing("g1", "u2") is None
        with pytest.raises(LlmConfigError, match="invalid billing choice 'tenant'"):
            await personal.remember_billing("g1", "u1", "tenant")

        assert not await personal.acknowledged("g1", "u1")
        assert await personal.acknowledge("g1", "u1") is True
        assert await personal.acknowledge("g1", "u1") is False  # once per guild
        assert await personal.acknowledged("g1", "u1")
        assert not await personal.acknowledged("g2", "u1")
        assert await personal.guilds_acknowledged("u1") == ["g1"]


async def test_keys_are_listed_preferred_and_removed(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel:
        personal = kernel.llm.personal
        url = "http://127.0.0.1:9/v1"
        await personal.add("u1", "openai-compatible", "a", USER_KEY, base_url=url)
        await personal.add("u1", "openai-compatible", "b", USER_KEY + "b", base_url=url)
        assert await personal.preferred("u1") is None
        [profile] = await personal.prefer("u1", "b", "model-b")
        assert (profile.owner, profile.credential_label) == (Owner.user("u1"), "b")
        views = {v.credential.label: v.preferred_for for v in await personal.keys("u1")}
        assert views == {"a": (), "b": ("chat",)}
        assert (await personal.preferred("u1")).model == "model-b"
        assert await personal.remove("u1", "b") == ["chat"]
        assert [v.credential.label for v in await personal.keys("u1")] == ["a"]
        assert await personal.keys("u2") == []


def test_the_disclosure_names_every_kind_of_context_a_run_withholds() -> None:
    """What a member confirms is what a run billed to their key leaves out until then: the
    admins' channel instructions too (``gigi_core.agent.runtime``)."""
    from gigi_core.llm.personal import disclosure_text

    text = disclosure_text("openai")
    for part in ("memory", "knowledge", "recent messages", "earlier turns", "instructions"):
        assert part in text
    assert "your openai account" in text
