"""Calls that arrive together at cold caches read each fact once (issue 17's c=10 tail)."""

from __future__ import annotations

import asyncio
import re
from collections import Counter

from tests.llm.inprocess import HI, OLD_KEY, KeyedEcho, Statements, configure, echo_kernel


def tables(reads: list[str]) -> Counter[str]:
    """SELECTs by the table they read first (FROM ...)."""
    return Counter(m.group(1) for s in reads if (m := re.search(r"\bFROM\s+(\w+)", s)))


async def test_ten_calls_at_a_cold_cache_read_what_one_call_reads(database_url, tmp_path) -> None:
    provider = KeyedEcho()
    async with echo_kernel(tmp_path, database_url, provider) as kernel:
        llm = kernel.llm
        await configure(kernel)
        await llm.chat(HI, guild_id="g1", actor="u1")  # the writer and statements warmed
        llm.cache.retire_all()  # cold: every fact and key read again
        with Statements(kernel) as one:
            await llm.chat(HI, guild_id="g1", actor="u1")
        llm.cache.retire_all()
        with Statements(kernel) as ten:
            replies = await asyncio.gather(
                *(llm.chat(HI, guild_id="g1", actor="u1") for _ in range(10))
            )
        assert {r.text for r in replies} == {"answer from m-1"}
        assert provider.log[-10:] == [("call", OLD_KEY)] * 10
        read_once = tables(one.reads())
        assert read_once["llm_guild_policies"] == 1 and read_once["llm_model_profiles"] >= 1
        assert read_once["llm_credentials"] >= 2  # the metadata, then the sealed key
        assert tables(ten.reads()) == read_once
        assert len(ten.touching("llm_usage_events", "INSERT")) >= 1  # rows still written
        assert len(llm.cache.reads) == 0  # no read left in flight


async def test_with_keys_not_kept_each_call_unseals_its_own(
    database_url, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("GIGI_LLM_SECRET_SECONDS", "0")
    provider = KeyedEcho()
    async with echo_kernel(tmp_path, database_url, provider) as kernel:
        await configure(kernel)
        await kernel.llm.chat(HI, guild_id="g1", actor="u1")
        kernel.llm.cache.retire_all()
        with Statements(kernel) as one:
            await kernel.llm.chat(HI, guild_id="g1", actor="u1")
        kernel.llm.cache.retire_all()
        with Statements(kernel) as three:
            await asyncio.gather(
                *(kernel.llm.chat(HI, guild_id="g1", actor="u1") for _ in range(3))
            )
        # The metadata is read once; the sealed key by every call.
        meta = tables(one.reads())["llm_credentials"] - 1
        assert tables(three.reads())["llm_credentials"] == meta + 3


async def test_a_purpose_and_its_fallback_are_read_in_one_statement(database_url, tmp_path) -> None:
    """`respond` falls back to `chat`: a cold resolution reads both profiles at once, and
    each purpose's answer (none for `respond`) is then cached on its own."""
    provider = KeyedEcho()
    async with echo_kernel(tmp_path, database_url, provider) as kernel:
        llm = kernel.llm
        await configure(kernel)  # a chat profile only
        await llm.chat(HI, guild_id="g1", actor="u1")
        llm.cache.retire_all()
        with Statements(kernel) as sql:
            reply = await llm.chat(HI, guild_id="g1", actor="u1", purpose="respond")
        assert reply.text == "answer from m-1"
        assert tables(sql.reads())["llm_model_profiles"] == 1
        with Statements(kernel) as warm:
            await llm.chat(HI, guild_id="g1", actor="u1", purpose="respond")
            await llm.chat(HI, guild_id="g1", actor="u1", purpose="chat")
        assert warm.reads() == []
        # A respond profile set through the kernel wins at once over the chat fallback.
        await llm.set_profile("guild:g1", "respond", "main", "m-respond")
        again = await llm.chat(HI, guild_id="g1", actor="u1", purpose="respond")
        assert again.text == "answer from m-respond"
        assert (await llm.chat(HI, guild_id="g1", actor="u1")).text == "answer from m-1"
