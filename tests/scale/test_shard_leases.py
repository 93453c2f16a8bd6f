"""Shard leases on both backends: K members started together share the shards, a member
started later stands by, a dead member's shards are taken over after their lease, a frozen
member finds them lost, a clean stop hands them back at once."""

from __future__ import annotations

import asyncio
import time

import pytest

from gigi_core.store.db import Database
from gigi_core.store.migrate import upgrade
from gigi_core.surfaces import ShardLeases

LEASE = 0.6


async def opened(database_url: str, tmp_path) -> Database:
    db = Database(database_url)
    await upgrade(db, {})
    return db


async def test_members_started_together_share_the_shards(database_url, tmp_path) -> None:
    db = await opened(database_url, tmp_path)
    try:
        members = [ShardLeases(db, 4, lease=LEASE) for _ in range(2)]
        beats = await asyncio.gather(*(m.join() for m in members))
        held = [set(b.held) for b in beats]
        assert [len(h) for h in held] == [2, 2] and held[0] | held[1] == {0, 1, 2, 3}
        assert all(b.members == 2 for b in beats)
        again = [await m.beat() for m in members]  # a beat renews, claims nothing new
        assert [set(b.held) for b in again] == held and all(not b.gained for b in again)
        rows = await members[0].table()
        assert {r["shard_id"]: r["owner"] for r in rows} == {
            s: m.owner for m, h in zip(members, held, strict=True) for s in h
        }
        assert all(0 < r["seconds_left"] <= LEASE for r in rows)
    finally:
        await db.close()


async def test_a_standby_takes_over_the_shards_of_a_member_that_stopped(
    database_url, tmp_path
) -> None:
    db = await opened(database_url, tmp_path)
    try:
        first = ShardLeases(db, 2, lease=LEASE)
        assert (await first.join(settle=0)).held == (0, 1)  # alone: every shard
        stopped = time.monotonic()  # `first` dies after its last beat: no more beats
        # The standby's own lease is long: on a loaded machine a pause between its last beat
        # and the frozen member's return must not hand the shards back (only `first` dies).
        late = ShardLeases(db, 2, lease=30)
        standby = await late.join(settle=0)
        assert standby.held == () and standby.members == 2  # nothing free: it stands by
        while not (beat := await late.beat()).held:
            assert time.monotonic() - stopped < LEASE + 2, "no takeover within the lease"
            await asyncio.sleep(LEASE / 3)
        assert time.monotonic() - stopped >= LEASE * 0.9  # not before the lease ran out
        while len(beat.held) < 2:  # the dead member no longer counts: the whole share
            beat = await late.beat()
        assert beat.held == (0, 1)
        thawed = await first.beat()  # the frozen one comes back: its shards are gone
        assert (thawed.held, thawed.lost) == ((), (0, 1))
    finally:
        await db.close()


async def test_a_clean_stop_hands_the_shards_back_at_once(database_url, tmp_path) -> None:
    db = await opened(database_url, tmp_path)
    try:
        first, second = ShardLeases(db, 2, lease=30), ShardLeases(db, 2, lease=30)
        assert (await first.join(settle=0)).held == (0, 1)
        assert (await second.join(settle=0)).held == ()
        assert await second.pool_count() == 2
        await first.release()
        assert (await second.beat()).held == (0, 1)  # no waiting for the 30 s lease
    finally:
        await db.close()


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_processes_starting_together_migrate_once(database_url) -> None:
    """Several processes upgrading a fresh database at once: one migrates, the others
    wait for it (an advisory lock on PostgreSQL) and find it up to date."""
    dbs = [Database(database_url) for _ in range(3)]
    try:
        await asyncio.wait_for(asyncio.gather(*(upgrade(db, {}) for db in dbs)), 60)
        from gigi_core.store.migrate import current_heads, script_heads

        assert await current_heads(dbs[0]) == script_heads({})
    finally:
        for db in dbs:
            await db.close()
