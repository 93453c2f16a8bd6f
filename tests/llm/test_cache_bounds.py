"""The LLM cache's time bounds hold for what nobody asks for again and for derived facts."""

from __future__ import annotations

import asyncio

import pytest

from gigi_core.llm import cache as cache_module
from gigi_core.llm.records import CredentialUnusable
from gigi_core.store.sealing import generate_key
from tests.llm.inprocess import HI, NEW_KEY, OLD_KEY, KeyedEcho, configure, echo_kernel


class Clock:
    """The cache's clock, moved by the test (the database and the loop keep real time)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


async def test_an_unsealed_key_nobody_asks_for_again_is_dropped_at_its_expiry(
    database_url, tmp_path, monkeypatch
) -> None:
    # long enough that a slow first call (a loaded CI machine) still finds the key kept
    monkeypatch.setenv("GIGI_LLM_SECRET_SECONDS", "2")
    async with echo_kernel(tmp_path, database_url, KeyedEcho()) as kernel:
        await configure(kernel)
        await kernel.llm.chat(HI, guild_id="g1", actor="u1")
        kept = kernel.llm.cache._secrets
        assert [s.plaintext for s in kept.values()] == [OLD_KEY]
        assert OLD_KEY not in repr(kept)  # a debugging print shows no key
        # The guild moves to another credential: the old key is simply never asked for.
        await kernel.llm.add_credential("guild:g1", "keyed-echo", "second", NEW_KEY)
        await kernel.llm.set_profile("guild:g1", "chat", "second", "m-1")
        await kernel.llm.chat(HI, guild_id="g1", actor="u1")
        await asyncio.sleep(2.5)
        assert kept == {}  # both keys are gone from memory, the unused one too


async def test_a_key_revoked_by_another_process_is_forgotten_when_that_is_seen(
    database_url, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("GIGI_LLM_CACHE_SECONDS", "0.2")
    key = generate_key()
    provider = KeyedEcho()
    async with (
        echo_kernel(tmp_path / "bot", database_url, provider, secret_key=key) as bot,
        echo_kernel(tmp_path / "cli", database_url, KeyedEcho(), secret_key=key) as cli,
    ):
        await configure(bot)
        await bot.llm.chat(HI, guild_id="g1", actor="u1")
        assert len(bot.llm.cache._secrets) == 1  # kept for a minute by default
        await cli.llm.revoke_credential("guild:g1", "main")
        await asyncio.sleep(0.3)
        with pytest.raises(CredentialUnusable, match="revoked"):
            await bot.llm.chat(HI, guild_id="g1", actor="u1")
        assert bot.llm.cache._secrets == {}


async def test_a_resolution_expires_with_the_oldest_fact_it_was_read_from(
    tmp_path, monkeypatch
) -> None:
    """A new member's resolution built from facts read earlier must not get a TTL of its
    own: a profile changed in another process applies within the TTL for them too. SQLite:
    the path with no change feed (PostgreSQL's applies the change at once while it listens)."""
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'gigi.db'}"
    monkeypatch.setenv("GIGI_LLM_CACHE_SECONDS", "1.0")
    clock = Clock()
    monkeypatch.setattr(cache_module, "time", clock)
    key = generate_key()
    async with (
        echo_kernel(tmp_path / "bot", database_url, KeyedEcho(), secret_key=key) as bot,
        echo_kernel(tmp_path / "cli", database_url, KeyedEcho(), secret_key=key) as cli,
    ):
        await configure(bot)
        assert (await bot.llm.chat(HI, guild_id="g1", actor="u1")).text == "answer from m-1"
        await cli.llm.set_profile("guild:g1", "chat", "main", "m-2")  # read at 1000.0, kept
        clock.now += 0.6  # a new member: their resolution is built from the cached facts
        assert (await bot.llm.chat(HI, guild_id="g1", actor="u2")).text == "answer from m-1"
        clock.now += 0.5  # 1.1 s after the facts were read, 0.5 s after u2's resolution
        assert (await bot.llm.chat(HI, guild_id="g1", actor="u2")).text == "answer from m-2"


def test_a_full_cache_drops_what_expired_before_what_is_live(monkeypatch) -> None:
    clock = Clock()
    monkeypatch.setattr(cache_module, "time", clock)
    cache = cache_module.LlmCache(ttl=1.0, secret_ttl=0)
    cache.max_entries = 4
    for key in ("a", "b"):
        cache.put((key,), key, cache.generation)
    clock.now += 1.5  # a and b expired
    for key in ("c", "d", "e"):  # e finds the cache full: only the expired go
        cache.put((key,), key, cache.generation)
    assert [cache.get((k,)) for k in "cde"] == ["c", "d", "e"]
    assert cache_module.MISSING is cache.get(("a",)) is cache.get(("b",))
    cache.put(("f",), "f", cache.generation)
    cache.put(("g",), "g", cache.generation)  # full of live facts: start again
    assert cache.get(("g",)) == "g" and cache.get(("c",)) is cache_module.MISSING
