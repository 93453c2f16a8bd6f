"""GuildLeft starts a grace period; the scheduled ``gigi.guild_purge`` job purges the guild."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from gigi_core.errors import ConfigError
from gigi_core.events import GuildJoined, GuildLeft
from gigi_core.privacy.service import PURGE_JOB, purge_after_days
from gigi_core.store.tables import CapabilityGrant, GuildPlugin
from gigi_core.testing import open_test_kernel
from tests.privacy.plugins import Notes

VARIABLE = "GIGI_GUILD_PURGE_AFTER_DAYS"


@pytest.fixture
async def env(database_url, tmp_path, monkeypatch):
    """notes enabled with a grant and notes in g1 and g2; job calls are recorded."""
    monkeypatch.delenv(VARIABLE, raising=False)
    notes = Notes(tmp_path)
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("notes", notes)], database_url=database_url
    ) as kernel:
        for guild in ("g1", "g2"):
            await kernel.enable_plugin(guild, "notes", by="boss")
            await kernel.add_grant(guild, "notes.use", "user", "u1")
            notes.add(guild, "u1", f"a note in {guild}")
        calls: list[tuple[Any, ...]] = []
        jobs = kernel.jobs
        real_defer, real_cancel = jobs.defer, jobs.cancel_key

        async def defer(name: str, payload: Any, **options: Any) -> Any:
            calls.append(("defer", name, payload, options))
            return await real_defer(name, payload, **options)

        async def cancel_key(name: str, key: str) -> Any:
            calls.append(("cancel", name, key))
            return await real_cancel(name, key)

        monkeypatch.setattr(jobs, "defer", defer)
        monkeypatch.setattr(jobs, "cancel_key", cancel_key)
        yield kernel, notes, calls


async def held(kernel: Any, guild: str) -> tuple[int, int]:
    """(plugin settings rows, grants) the kernel holds for a guild."""
    async with kernel.db.session() as s:
        settings = await s.scalar(
            select(func.count()).select_from(GuildPlugin).where(GuildPlugin.guild_id == guild)
        )
        grants = await s.scalar(
            select(func.count())
            .select_from(CapabilityGrant)
            .where(CapabilityGrant.guild_id == guild)
        )
    return settings, grants


@pytest.mark.parametrize(("setting", "days"), [(None, 30.0), ("2.5", 2.5)])
async def test_guild_left_defers_the_purge_after_the_grace_period(
    env, monkeypatch, setting, days
) -> None:
    kernel, notes, calls = env
    if setting is not None:
        monkeypatch.setenv(VARIABLE, setting)
    before = datetime.now(UTC)
    await kernel.publish(GuildLeft(guild_id="g1"))
    [(kind, name, payload, options)] = calls
    assert (kind, name, payload) == ("defer", PURGE_JOB, {"guild_id": "g1"})
    assert options["key"] == "purge:g1"
    expected = before + timedelta(days=days)
    assert abs((options["run_at"] - expected).total_seconds()) < 60
    await kernel.jobs.run_until_idle()  # not due yet: nothing is purged
    assert await held(kernel, "g1") == (1, 1)
    assert ("g1", "u1") in notes.notes


async def test_guild_joined_before_then_cancels_the_purge(env, monkeypatch) -> None:
    kernel, notes, calls = env
    monkeypatch.setenv(VARIABLE, "0")  # due at once, so only the cancellation can save it
    await kernel.publish(GuildLeft(guild_id="g1"))
    await kernel.publish(GuildJoined(guild_id="g1"))
    assert calls[-1] == ("cancel", PURGE_JOB, "purge:g1")
    await kernel.jobs.run_until_idle()
    assert await held(kernel, "g1") == (1, 1)
    assert notes.notes[("g1", "u1")] == ["a note in g1"]
    assert not any(kind == "purge" for kind, _, _ in notes.asked)


async def test_the_worker_purges_the_guild_when_the_grace_period_is_over(env, monkeypatch) -> None:
    kernel, notes, _ = env
    monkeypatch.setenv(VARIABLE, "0")
    await kernel.publish(GuildLeft(guild_id="g1"))
    await kernel.publish(GuildLeft(guild_id="g1"))  # a second leave queues no second purge
    await kernel.jobs.run_until_idle()
    assert await held(kernel, "g1") == (0, 0)
    assert ("g1", "u1") not in notes.notes
    assert [a for a in notes.asked if a[0] == "purge"] == [("purge", None, "g1")]
    # the other guild is untouched
    assert await held(kernel, "g2") == (1, 1)
    assert notes.notes[("g2", "u1")] == ["a note in g2"]
    assert "notes" in await kernel.plugin_state.enabled_plugins("g2")


async def test_the_registered_job_purges_one_guild(database_url, tmp_path) -> None:
    """The job function itself (what the worker calls), without the queue."""
    from types import SimpleNamespace

    notes = Notes(tmp_path)
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("notes", notes)], database_url=database_url
    ) as kernel:
        spec = kernel.registry.jobs[PURGE_JOB]
        assert spec.plugin == "native_tools" and spec.schedule is None
        for guild in ("g1", "g2"):
            await kernel.enable_plugin(guild, "notes")
            notes.add(guild, "u1", "x")
        await spec.fn(SimpleNamespace(kernel=kernel), guild_id="g1")
        assert await held(kernel, "g1") == (0, 0) and await held(kernel, "g2") == (1, 0)
        assert list(notes.notes) == [("g2", "u1")]


async def test_a_dm_lifecycle_event_schedules_nothing(env) -> None:
    kernel, _, calls = env
    await kernel.publish(GuildLeft(guild_id=None))
    assert calls == []


@pytest.mark.parametrize("raw", ["-1", "soon", "nan", "inf", "1e9"])
def test_a_bad_purge_after_days_is_a_config_error(monkeypatch, raw) -> None:
    monkeypatch.setenv(VARIABLE, raw)
    with pytest.raises(ConfigError) as info:
        purge_after_days()
    assert VARIABLE in str(info.value) and repr(raw) in str(info.value)


@pytest.mark.parametrize(("raw", "days"), [(None, 30.0), ("", 30.0), ("0", 0.0), ("1.5", 1.5)])
def test_good_purge_after_days(monkeypatch, raw, days) -> None:
    if raw is None:
        monkeypatch.delenv(VARIABLE, raising=False)
    else:
        monkeypatch.setenv(VARIABLE, raw)
    assert purge_after_days() == days
