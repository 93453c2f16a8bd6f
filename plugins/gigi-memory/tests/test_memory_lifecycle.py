"""Retention (the scheduled purge job and retention changes) and members' data: export,
delete and the guild purge, through the kernel's privacy service."""

from __future__ import annotations

import sqlalchemy as sa
from gigi_memory.service import service_of
from memory_helpers import (
    ago,
    call,
    count,
    dump_text,
    embed_all,
    enable,
    message,
    publish,
    rows,
    segments_of,
)


async def _age(kernel, days: float) -> None:
    """Pretend every stored message was written ``days`` earlier (retention included)."""
    shift = int(days * 86_400_000)
    async with service_of(kernel).engine.begin() as conn:
        await conn.execute(
            sa.text(
                "UPDATE memory_messages SET created_ms = created_ms - :s, "
                "retention_until_ms = retention_until_ms - :s"
            ),
            {"s": shift},
        )


async def test_the_retention_job_purges_what_expired(kernel) -> None:
    await enable(kernel, days=7)
    await enable(kernel, channel="c2", days=30)
    await publish(
        kernel,
        message("canaryexpired", mentioned_user_ids=("5",)),
        message("young", channel_id="c2"),
    )
    await embed_all(kernel)
    assert len(await segments_of(kernel)) == 2
    await _age(kernel, 10)
    job = kernel.registry.jobs["memory.retention"]
    assert job.schedule == "17 * * * *"
    await kernel.jobs.defer("memory.retention", {})
    await kernel.jobs.run_until_idle()
    assert "canaryexpired" not in await dump_text(kernel)
    assert await rows(kernel, "SELECT * FROM memory_mentions") == []
    assert [r.channel_id for r in await segments_of(kernel)] == ["c2"]  # expired vectors gone
    assert await count(kernel, author="u1", channel="c2") == 1
    (done,) = [j for j in await kernel.jobs.list(name="memory.retention") if j.status == "done"]
    assert done.attempts == 1


async def test_the_purge_is_recorded_for_status(kernel) -> None:
    await call(kernel, "policy", retention_days=2)
    await enable(kernel, days=None)
    await publish(kernel, message("a"), message("b"))
    await _age(kernel, 3)
    await kernel.jobs.defer("memory.retention", {}, key="memory-retention")  # one queued purge
    await kernel.jobs.run_until_idle()
    status = await call(kernel, "status")
    assert status["last_purge"]["messages"] == 2 and status["last_purge"]["at"] is not None


async def test_a_shorter_retention_applies_to_what_is_stored(kernel) -> None:
    await call(kernel, "policy", retention_days=30)
    await enable(kernel, days=None)  # follows the server default
    await enable(kernel, channel="c2", days=30)  # its own
    await publish(kernel, message("old news"), message("other", channel_id="c2"))
    await _age(kernel, 5)
    await call(kernel, "policy", retention_days=3)  # c1 follows; c2 keeps 30 days
    assert await count(kernel, text="old") == 0  # hidden at once
    await kernel.jobs.run_until_idle()  # the change queued a purge
    assert await rows(kernel, "SELECT * FROM memory_messages WHERE channel_id = 'c1'") == []
    assert await count(kernel, text="other", channel="c2") == 1


async def test_messages_past_retention_are_not_ingested(kernel) -> None:
    await enable(kernel, days=1)
    # Imported or late messages go through the same gate (live=False skips the enable time).
    svc = service_of(kernel)
    gate = svc.cache.gate(
        guild_id="g1",
        channel_id="c1",
        parent_id=None,
        kind="text",
        is_bot=False,
        created_ms=int(ago(days=2).timestamp() * 1000),
        live=False,
    )
    assert not gate.ingest and gate.reason == "past retention"


async def test_export_and_delete_a_members_data(kernel) -> None:
    await enable(kernel)
    await enable(kernel, channel="c2")
    await publish(
        kernel,
        message("my canaryown words", author_id="u7"),
        message("more from me", author_id="u7", channel_id="c2"),
        message("hi <@7>", author_id="u8", mentioned_user_ids=("u7",)),
    )
    await embed_all(kernel)
    assert len(await segments_of(kernel)) == 3
    export = await kernel.privacy.export("u7", "g1")
    mine = export["plugins"]["memory"]
    assert [m["text"] for m in mine["messages"]] == ["my canaryown words", "more from me"]
    assert mine["times_mentioned"] == 1
    assert (await kernel.privacy.export("u9", "g1"))["plugins"].get("memory") is None

    result = await kernel.privacy.delete("u7", "g1")
    assert result["plugins"]["memory"] == {"messages": 2, "mentions": 1}
    assert "canaryown" not in await dump_text(kernel)
    assert [r.author_id for r in await segments_of(kernel)] == ["u8"]  # u7's vectors gone
    assert await count(kernel, author="u8") == 1
    assert await count(kernel, mentioned="u7") == 0
    again = await kernel.privacy.delete("u7", "g1")
    assert "memory" not in again["plugins"]  # idempotent: nothing left to count


async def test_purge_guild_data_forgets_the_guild(kernel) -> None:
    await enable(kernel)
    await publish(kernel, message("canaryguild"))
    await embed_all(kernel)
    assert len(await segments_of(kernel)) == 1
    result = await kernel.privacy.purge_guild("g1")
    assert await segments_of(kernel) == []
    assert result["plugins"]["memory"]["messages"] == 1
    assert "canaryguild" not in await dump_text(kernel)
    assert await rows(kernel, "SELECT * FROM memory_channels") == []
    assert await rows(kernel, "SELECT * FROM memory_guild_policies") == []
    await publish(kernel, message("after the purge"))
    assert await rows(kernel, "SELECT * FROM memory_messages") == []


async def test_a_restart_keeps_policy_and_memory(database_url, tmp_path) -> None:
    from gigi_core.testing import open_test_kernel

    key = "k" * 43
    async with open_test_kernel(
        tmp_path, plugins=["memory"], database_url=database_url, secret_key=key
    ) as k:
        await k.enable_plugin("g1", "memory")
        await enable(k)
        await publish(k, message("before the restart"))
    async with open_test_kernel(
        tmp_path, plugins=["memory"], database_url=database_url, secret_key=key
    ) as k:
        await publish(k, message("after the restart"))
        assert await count(k, text="restart") == 2
        snippets = [m["snippet"] for m in (await call(k, "recent"))["messages"]]
        assert snippets == ["after the restart", "before the restart"]


async def test_another_process_sees_policy_changes(database_url, tmp_path, monkeypatch) -> None:
    import asyncio

    from gigi_core.testing import open_test_kernel

    monkeypatch.setenv("GIGI_MEMORY_POLICY_SECONDS", "0.1")
    key = "k" * 43
    async with (
        open_test_kernel(
            tmp_path / "a", plugins=["memory"], database_url=database_url, secret_key=key
        ) as a,
        open_test_kernel(
            tmp_path / "b", plugins=["memory"], database_url=database_url, secret_key=key
        ) as b,
    ):
        await a.enable_plugin("g1", "memory")
        await enable(a)
        await asyncio.sleep(0.4)
        assert service_of(b).cache.channel("g1", "c1").mode == "on"
        await call(a, "disable", channel="c1")
        await asyncio.sleep(0.4)
        await publish(b, message("after the disable, seen by the other process"))
        assert await count(a, author="u1") == 0
