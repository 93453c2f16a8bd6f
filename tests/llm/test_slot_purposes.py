"""Seed 004's model slots are purposes: an admin can set a profile per slot, and an owner
with none serves the slot with its general purpose's profile, without changing who pays
(docs/llm-admin.md "Slot purposes")."""

from __future__ import annotations

import pytest

from gigi_core import Actor
from gigi_core.agent import Request
from gigi_core.agent.runtime import AgentRuntime
from gigi_core.llm.records import (
    PURPOSES,
    LlmConfigError,
    NothingToResolve,
    Owner,
    check_purpose,
    purpose_chain,
)
from tests.llm.inprocess import KeyedEcho, configure, echo_kernel
from tests.llm.service_helpers import GUILD_KEY, TENANT_KEY, USER_KEY, llm_kernel

SLOTS = ("classify", "extract", "summarise", "query_analyse", "respond", "complex")


def test_slot_purposes_are_known_and_others_are_not() -> None:
    for slot in SLOTS:
        assert slot in PURPOSES and check_purpose(slot) == slot
    with pytest.raises(LlmConfigError, match="unknown purpose"):
        check_purpose("complexSynthesis")
    with pytest.raises(LlmConfigError, match="unknown purpose"):
        purpose_chain("complexSynthesis")


def test_each_slot_falls_back_to_a_general_purpose() -> None:
    assert purpose_chain("respond") == ("respond", "chat")
    assert purpose_chain("query_analyse") == ("query_analyse", "routing")
    assert purpose_chain("classify") == ("classify", "routing")
    assert purpose_chain("complex") == ("complex", "extract", "chat")
    # planning asks for the reasoning profile, else the answering one, in one owner
    assert purpose_chain("reasoning") == ("reasoning", "respond", "chat")
    for general in ("chat", "routing", "embedding"):
        assert purpose_chain(general) == (general,)


async def test_a_slot_profile_resolves_and_a_missing_one_does_not(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel:
        llm = kernel.llm
        url = "http://127.0.0.1:9/v1"  # never called here
        await llm.add_credential("guild:g1", "openai-compatible", "k", GUILD_KEY, base_url=url)
        await llm.set_profile("guild:g1", "chat", "k", "big")
        await llm.set_profile("guild:g1", "query_analyse", "k", "tiny", fallback_model="tinier")
        chosen = await llm.resolve("g1", "query_analyse", "u1")
        assert (chosen.model, chosen.fallback_model) == ("tiny", "tinier")
        assert (await llm.resolve("g1", "chat", "u1")).model == "big"
        # No complex or extract profile: the guild's chat profile serves the slot.
        served = await llm.resolve("g1", "complex", "u1")
        assert (served.owner, served.purpose, served.model) == (Owner.guild("g1"), "chat", "big")
        await llm.set_profile("guild:g1", "extract", "k", "mid")
        assert (await llm.resolve("g1", "complex", "u1")).model == "mid"
        # routing is the general purpose of query_analyse and classify; chat is not.
        with pytest.raises(
            NothingToResolve,
            match=r"no routing model is configured for guild g1 \(asked for classify; ",
        ):
            await llm.resolve("g1", "classify", "u1")


async def test_a_slot_never_changes_who_pays(database_url, tmp_path) -> None:
    """The guild's general profile beats a user's or the tenant's slot profile."""
    async with llm_kernel(tmp_path, database_url) as kernel:
        llm = kernel.llm
        url = "http://127.0.0.1:9/v1"  # never called here
        for owner, key in (("guild:g1", GUILD_KEY), ("user:u1", USER_KEY), ("tenant", TENANT_KEY)):
            await llm.add_credential(owner, "openai-compatible", "k", key, base_url=url)
        await llm.set_profile("user:u1", "respond", "k", "user-respond")
        await llm.set_profile("tenant", "respond", "k", "tenant-respond")
        await llm.set_policy("g1", personal_keys="guild-allowed", tenant_fallback=True)
        # The guild has no profile at all: the user's respond profile is next in line.
        assert (await llm.resolve("g1", "respond", "u1")).model == "user-respond"
        assert (await llm.resolve("g1", "respond", "u1", billing="server")).model == (
            "tenant-respond"
        )
        await llm.set_profile("guild:g1", "chat", "k", "guild-chat")
        for billing in ("auto", "server"):
            served = await llm.resolve("g1", "respond", "u1", billing=billing)
            assert (served.owner, served.model) == (Owner.guild("g1"), "guild-chat")
        # billing="me" asks the user only, and the user's slot profile serves it.
        assert (await llm.resolve("g1", "respond", "u1", billing="me")).model == "user-respond"


async def test_an_agent_answer_asks_the_respond_slot(database_url, tmp_path) -> None:
    """The agent's model calls use ``respond``: the chat profile until a respond one is set."""
    request = Request(
        actor=Actor(id="u1"), guild_id="g1", channel_id="c1", kind="mention", text="go"
    )
    async with echo_kernel(tmp_path, database_url, KeyedEcho()) as kernel:
        await configure(kernel)  # a guild chat profile, model m-1
        runtime = AgentRuntime(kernel)
        assert (await runtime.handle(request)).text == "answer from m-1"
        await kernel.llm.set_profile("guild:g1", "respond", "main", "m-respond")
        assert (await runtime.handle(request)).text == "answer from m-respond"
        await kernel.db.writer.drain()
        events = await kernel.llm.usage_log.events("g1")
    assert sorted((e["purpose"], e["model"]) for e in events) == [
        ("chat", "m-1"),
        ("respond", "m-respond"),
    ]
