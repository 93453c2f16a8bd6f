"""Seed 004's model slots are purposes: an admin can set a profile per slot, it resolves
like any purpose, and a slot with no profile is ``NothingToResolve`` (the caller then asks
its general purpose; see docs/llm-admin.md "Slot purposes")."""

from __future__ import annotations

import pytest

from gigi_core.llm.records import PURPOSES, LlmConfigError, NothingToResolve, check_purpose
from tests.llm.service_helpers import GUILD_KEY, llm_kernel

SLOTS = ("classify", "extract", "summarise", "query_analyse", "respond", "complex")


def test_slot_purposes_are_known_and_others_are_not() -> None:
    for slot in SLOTS:
        assert slot in PURPOSES and check_purpose(slot) == slot
    with pytest.raises(LlmConfigError, match="unknown purpose"):
        check_purpose("complexSynthesis")


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
        with pytest.raises(NothingToResolve):
            await llm.resolve("g1", "complex", "u1")
