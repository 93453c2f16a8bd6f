"""``kernel.limits``: "at most N per window" per key — exact in one process on SQLite, shared
by every process on PostgreSQL, and keys stored only as keyed hashes."""

from __future__ import annotations

import asyncio
import itertools

from sqlalchemy import select

from gigi_core.store.limit_tables import RateBucket
from gigi_core.testing import open_test_kernel
from tests.conftest import _fresh_postgres_database


class Clock:
    def __init__(self, now: float = 1_000_020.0) -> None:  # 20 s into a 60 s window
        self.now = now

    def __call__(self) -> float:
        return self.now


async def test_a_key_meets_its_limit_and_recovers_after_the_window(tmp_path, database_url) -> None:
    async with open_test_kernel(tmp_path, database_url=database_url) as kernel:
        clock = Clock()
        kernel.limits.clock = clock
        take = kernel.limits.take
        assert [await take("runs", "g:u", 2) for _ in range(3)] == [True, True, False]
        assert await take("runs", "g:other", 2) and await take("other-scope", "g:u", 2)
        assert await take("runs", "g:u", 0)  # 0: no limit
        clock.now += 120  # two windows on: nothing of the burst is counted any more
        assert await take("runs", "g:u", 2)


async def test_postgres_counts_the_previous_window_by_its_overlap(tmp_path, postgres_server):
    url = _fresh_postgres_database(postgres_server)
    async with open_test_kernel(tmp_path, database_url=url) as kernel:
        clock = Clock(1_000_050.0)  # 50 s into the window
        kernel.limits.clock = clock
        for _ in range(4):
            assert await kernel.limits.take("runs", "g:u", 4)
        clock.now += 20  # 10 s into the next window: 5/6 of the old one still counts
        assert not await kernel.limits.take("runs", "g:u", 4)  # 4 * 5/6 + 1 > 4
        clock.now += 40  # 50 s in: 1/6 of it
        assert await kernel.limits.take("runs", "g:u", 4)
        async with kernel.db.session() as s:
            rows = (await s.scalars(select(RateBucket))).all()
        assert rows and all("g:u" not in r.key_hash and len(r.key_hash) >= 32 for r in rows)


async def test_postgres_processes_share_one_limit(tmp_path, postgres_server) -> None:
    """Processes of one deployment share its secret key, so a key hashes the same in each."""
    from gigi_core.store.sealing import generate_key

    url, key = _fresh_postgres_database(postgres_server), generate_key()
    async with (
        open_test_kernel(tmp_path, database_url=url, secret_key=key) as one,
        open_test_kernel(tmp_path, database_url=url, secret_key=key) as two,
    ):
        results = await asyncio.gather(*(k.limits.take("runs", "g:u", 5) for k in (one, two) * 5))
        assert sorted(results) == [False] * 5 + [True] * 5


async def _passes(limits, name: str, every: float, n: int) -> tuple[list[float], list[float]]:
    """The turns' times as ``wait_turn`` took them, and as the callers saw them return."""
    loop = asyncio.get_running_loop()
    taken: list[float] = []
    seen: list[float] = []

    async def one() -> None:
        taken.append(await limits.wait_turn(name, every))
        seen.append(loop.time())

    await asyncio.gather(*(one() for _ in range(n)))
    return sorted(taken), sorted(seen)


def _gaps(times: list[float]) -> list[float]:
    return [round(b - a, 3) for a, b in itertools.pairwise(times)]


# asyncio may wake a sleeper up to its clock resolution early.
EARLY = 0.005


async def test_turns_are_spaced_per_name(tmp_path, database_url) -> None:
    async with open_test_kernel(tmp_path, database_url=database_url) as kernel:
        loop = asyncio.get_running_loop()
        start = loop.time()
        taken, seen = await _passes(kernel.limits, "identify.0", 0.3, 3)
        assert all(g >= 0.3 - EARLY for g in _gaps(taken)), _gaps(taken)
        # The first turn waits for nobody; the last caller returns after all the spacing.
        assert seen[0] - start < 0.25 and seen[-1] - start >= 0.6 - EARLY
        before = loop.time()
        await kernel.limits.wait_turn("identify.1", 0.3)  # another bucket waits for nobody
        assert loop.time() - before < 0.25


async def test_postgres_processes_take_turns(tmp_path, postgres_server) -> None:
    url = _fresh_postgres_database(postgres_server)
    async with (
        open_test_kernel(tmp_path, database_url=url) as one,
        open_test_kernel(tmp_path, database_url=url) as two,
    ):
        loop = asyncio.get_running_loop()
        start = loop.time()
        taken: list[float] = []

        async def turn(kernel) -> None:
            taken.append(await kernel.limits.wait_turn("identify.0", 0.4))

        await asyncio.gather(turn(one), turn(two), turn(one), turn(two))
        taken.sort()
        # Spaced in the database's clock, whichever process took each turn (uncoordinated,
        # the gaps would be ~0). When each caller then wakes depends on the machine's load,
        # so this checks the spacing the turns were given, not the wake-ups.
        assert all(gap >= 0.4 - EARLY for gap in _gaps(taken)), _gaps(taken)
        assert loop.time() - start >= 1.2 - EARLY
