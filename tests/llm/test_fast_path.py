"""The LLM fast path: cached resolution and keys, and changes that still apply at once."""

from __future__ import annotations

import asyncio

import pytest

from gigi_core.llm.records import CredentialUnusable
from gigi_core.store.sealing import generate_key
from tests.llm.inprocess import (
    HI,
    NEW_KEY,
    OLD_KEY,
    KeyedEcho,
    Statements,
    configure,
    echo_kernel,
)


async def _usage_rows(kernel) -> int:
    return len(await kernel.llm.usage_log.events("g1", limit=100_000))


async def test_a_warm_call_reads_nothing_and_changes_apply_at_once(database_url, tmp_path) -> None:
    provider = KeyedEcho()
    async with echo_kernel(tmp_path, database_url, provider) as kernel:
        llm = kernel.llm
        await configure(kernel)
        await llm.chat(HI, guild_id="g1", actor="u1")  # warms the cache (and the writer)
        with Statements(kernel) as sql:
            for _ in range(5):
                reply = await llm.chat(HI, guild_id="g1", actor="u1")
        assert reply.text == "answer from m-1"
        assert sql.reads() == []  # policy, profile, credential and key all cached
        assert len(sql.touching("llm_usage_events", "INSERT")) == 5  # one row per call
        assert sql.touching("llm_credentials", "UPDATE") == []  # the outcome did not change

        # Changes through the kernel apply to the very next call.
        await llm.set_profile("guild:g1", "chat", "main", "m-2")
        assert (await llm.chat(HI, guild_id="g1", actor="u1")).text == "answer from m-2"
        await llm.add_credential("user:u1", "keyed-echo", "mine", NEW_KEY)
        await llm.set_profile("user:u1", "chat", "mine", "personal")
        await llm.set_profile("guild:g1", "chat", "main", "m-3", enabled=False)
        await llm.set_policy("g1", personal_keys="guild-allowed")
        assert (await llm.chat(HI, guild_id="g1", actor="u1")).text == "answer from personal"
        assert provider.log[-1] == ("call", NEW_KEY)
        assert await _usage_rows(kernel) == 8


async def test_the_outcome_is_written_only_when_it_changes(database_url, tmp_path) -> None:
    provider = KeyedEcho()
    async with echo_kernel(tmp_path, database_url, provider) as kernel:
        llm = kernel.llm
        await configure(kernel)
        await llm.chat(HI, guild_id="g1", actor="u1")
        with Statements(kernel) as sql:
            provider.fail = "auth"
            for _ in range(3):
                with pytest.raises(Exception, match="failed: auth"):
                    await llm.chat(HI, guild_id="g1", actor="u1")
            assert len(sql.touching("llm_credentials", "UPDATE")) == 1  # active -> failing
            [cred] = await llm.list_credentials("guild:g1")
            assert (cred.status, cred.last_error_class) == ("failing", "auth")
            provider.fail = None
            await llm.chat(HI, guild_id="g1", actor="u1")
            await llm.chat(HI, guild_id="g1", actor="u1")
            assert len(sql.touching("llm_credentials", "UPDATE")) == 2  # failing -> active
        [cred] = await llm.list_credentials("guild:g1")
        assert cred.status == "active"
        assert await _usage_rows(kernel) == 6


async def _until(provider: KeyedEcho, calls: int, failures: list | None = None) -> None:
    """Wait (under load) until the provider saw ``calls`` calls (or that many failures)."""
    for _ in range(2000):
        if len(provider.log if failures is None else failures) >= calls:
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"only {len(provider.log)} calls")


async def _load(llm, stop: asyncio.Event, failures: list[BaseException]) -> int:
    calls = 0
    while not stop.is_set():
        try:
            await llm.chat(HI, guild_id="g1", actor="u1")
        except CredentialUnusable as exc:
            failures.append(exc)
        calls += 1
    return calls


async def test_no_call_after_a_revoke_returns_uses_the_key(database_url, tmp_path) -> None:
    provider = KeyedEcho()
    async with echo_kernel(tmp_path, database_url, provider) as kernel:
        llm = kernel.llm
        await configure(kernel)
        await llm.chat(HI, guild_id="g1", actor="u1")
        stop, failures = asyncio.Event(), []
        gate = provider.gate = asyncio.Event()
        workers = [asyncio.create_task(_load(llm, stop, failures)) for _ in range(8)]
        await _until(provider, 9)  # eight calls are in flight, held inside the provider
        gate.set()
        provider.gate = None
        await _until(provider, 40)  # under load
        await llm.revoke_credential("guild:g1", "main")
        returned = len(provider.log)
        await _until(provider, 20, failures)
        stop.set()
        calls = sum(await asyncio.gather(*workers))
        assert provider.log[returned:] == []  # every later call stopped before the provider
        assert failures and all("revoked" in str(f) for f in failures)
        with pytest.raises(CredentialUnusable, match="revoked"):
            await llm.chat(HI, guild_id="g1", actor="u1")
        # Every call that reached the provider has its usage row.
        assert await _usage_rows(kernel) == len(provider.log)
        assert calls == len(provider.log) - 1 + len(failures)


async def test_a_rotation_mid_load_switches_keys_at_once(database_url, tmp_path) -> None:
    provider = KeyedEcho()
    async with echo_kernel(tmp_path, database_url, provider) as kernel:
        llm = kernel.llm
        await configure(kernel)
        [original] = await llm.list_credentials("guild:g1")
        stop, failures = asyncio.Event(), []
        workers = [asyncio.create_task(_load(llm, stop, failures)) for _ in range(8)]
        await _until(provider, 30)
        cred = await llm.rotate_credential("guild:g1", "main", NEW_KEY)
        returned = len(provider.log)
        await _until(provider, returned + 30)
        stop.set()
        calls = sum(await asyncio.gather(*workers))
        assert failures == []  # the profile kept working through the rotation
        before, after = provider.log[:returned], provider.log[returned:]
        assert ("call", OLD_KEY) in before and after
        assert set(after) == {("call", NEW_KEY)}  # never the old key once rotate returned
        assert cred.status == "active"
        assert (cred.id, cred.label) == (original.id, original.label)  # profiles keep it
        assert cred.fingerprint_suffix != original.fingerprint_suffix
        assert await _usage_rows(kernel) == len(provider.log) == calls


async def test_a_change_in_another_process_applies_within_the_ttl(
    database_url, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("GIGI_LLM_CACHE_SECONDS", "0.3")
    key = generate_key()
    provider, other = KeyedEcho(), KeyedEcho()
    async with (
        echo_kernel(tmp_path / "bot", database_url, provider, secret_key=key) as bot,
        echo_kernel(tmp_path / "cli", database_url, other, secret_key=key) as cli,
    ):
        await configure(bot)
        assert (await bot.llm.chat(HI, guild_id="g1", actor="u1")).text == "answer from m-1"
        await cli.llm.set_profile("guild:g1", "chat", "main", "m-2")  # the CLI, meanwhile
        await asyncio.sleep(0.35)
        assert (await bot.llm.chat(HI, guild_id="g1", actor="u1")).text == "answer from m-2"

        await cli.llm.rotate_credential("guild:g1", "main", NEW_KEY)
        await asyncio.sleep(0.35)
        await bot.llm.chat(HI, guild_id="g1", actor="u1")
        assert provider.log[-1] == ("call", NEW_KEY)  # the new fingerprint missed the old key

        await cli.llm.revoke_credential("guild:g1", "main")
        await asyncio.sleep(0.35)
        calls = len(provider.log)
        with pytest.raises(CredentialUnusable, match="revoked"):
            await bot.llm.chat(HI, guild_id="g1", actor="u1")
        assert len(provider.log) == calls


async def test_the_cache_settings_are_checked(monkeypatch, tmp_path) -> None:
    from gigi_core.errors import ConfigError
    from gigi_core.llm.cache import MISSING, LlmCache

    monkeypatch.setenv("GIGI_LLM_SECRET_SECONDS", "soon")
    with pytest.raises(ConfigError, match="GIGI_LLM_SECRET_SECONDS"):
        LlmCache()
    monkeypatch.setenv("GIGI_LLM_SECRET_SECONDS", "0")
    cache = LlmCache(ttl=0)
    cache.keep_secret("c1", "fp", "sk-x", cache.epoch("c1"))
    cache.put(("policy", "g1"), "p", cache.generation)
    assert cache.secret("c1", "fp") is None  # 0 turns each cache off
    assert cache.get(("policy", "g1")) is MISSING


def test_near_expiry_one_caller_renews_a_fact_and_the_rest_keep_it(monkeypatch) -> None:
    """In its last quarter a fact is missing to one caller only (ten turns arriving as it
    expires read it once, not ten times); past its TTL it is missing to everyone."""
    from gigi_core.llm import cache as cache_module
    from gigi_core.llm.cache import MISSING, LlmCache

    now = [100.0]
    monkeypatch.setattr(cache_module.time, "monotonic", lambda: now[0])
    cache = LlmCache(ttl=2.0, secret_ttl=0)
    key = ("policy", "g1")
    cache.put(key, "old", cache.generation)
    now[0] = 101.0
    assert [cache.get(key) for _ in range(10)] == ["old"] * 10
    now[0] = 101.6  # the last quarter: the first caller renews it
    seen = [cache.get(key) for _ in range(10)]
    assert seen == [MISSING] + ["old"] * 9
    cache.put(key, "new", cache.generation)  # what the renewing caller read
    assert cache.get(key) == "new"
    now[0] = 103.5  # "new" lives until 103.6, and its last quarter began at 103.1
    assert [cache.get(key) for _ in range(3)] == [MISSING, "new", "new"]
    now[0] = 103.7  # the renewal failed (no put): past the TTL, nobody gets the old value
    assert [cache.get(key) for _ in range(3)] == [MISSING] * 3
    cache.put(key, "newer", cache.generation)
    now[0] = 105.3  # a renewal begun before a clear is not kept, and the claim goes with it
    assert cache.get(key) is MISSING
    generation = cache.generation
    cache.clear()
    cache.put(key, "stale", generation)
    assert [cache.get(key) for _ in range(2)] == [MISSING, MISSING]


async def test_with_a_loader_a_fact_is_renewed_in_the_background_and_nobody_waits(
    monkeypatch,
) -> None:
    """With a loader for its kind, the fact's last quarter starts one background read and
    every caller keeps the cached value meanwhile; a read begun before a clear is not
    kept, and a failed read leaves the fact to expire as usual."""
    from gigi_core.llm import cache as cache_module
    from gigi_core.llm.cache import MISSING, LlmCache

    now = [100.0]
    monkeypatch.setattr(cache_module.time, "monotonic", lambda: now[0])
    cache = LlmCache(ttl=2.0, secret_ttl=0)
    reads: list[tuple] = []
    release = asyncio.Event()
    answer = ["fresh"]

    async def load(key):
        reads.append(key)
        await release.wait()
        if answer[0] == "boom":
            raise RuntimeError("the database went away")
        return answer[0]

    cache.loaders["policy"] = load
    key = ("policy", "g1")
    cache.put(key, "old", cache.generation)
    now[0] = 101.6  # the last quarter
    assert [cache.get(key) for _ in range(10)] == ["old"] * 10  # nobody is told to read
    await asyncio.sleep(0)
    assert reads == [key]  # one read, in the background
    release.set()
    await asyncio.sleep(0)
    assert cache.get(key) == "fresh"
    now[0] = 103.5  # "fresh" expires at 103.6: renewed again, but cleared meanwhile
    release.clear()
    assert cache.get(key) == "fresh"
    cache.clear()  # a change through the kernel: the running read must not be kept
    release.set()
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert cache.get(key) is MISSING
    cache.put(key, "again", cache.generation)
    now[0] = 105.4  # its last quarter; this renewal fails
    answer[0] = "boom"
    assert cache.get(key) == "again"
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    now[0] = 105.6  # past its TTL: expired for everyone, as without a loader
    assert [cache.get(key) for _ in range(2)] == [MISSING, MISSING]
    assert len(reads) == 3
