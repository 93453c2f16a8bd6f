"""SQL over ``gigi_jobs``: the record both backends share. Every change made by a worker is
fenced by (worker, attempt), so a worker that lost a job (declared stalled) cannot
overwrite what the worker that took it over writes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, delete, func, insert, literal, or_, select, union_all, update

from gigi_core.store.job_tables import JobRow, JobSchedule

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from gigi_core.store.db import Database

T = JobRow.__table__
S = JobSchedule.__table__
FAST_CONNECTIONS = 3  # PostgreSQL; SQLite writes through one


def _due(names: list[str], now: datetime, stale: datetime, *columns: Any) -> Any:
    """Queued and due, or running without a heartbeat since ``stale`` (its worker died).

    Two branches, each on ``ix_gigi_jobs_due`` (status, name, run_at): with one OR,
    SQLite picked an index on name alone and walked every done row of that name.
    """
    columns = columns or (T.c.id,)
    return union_all(
        select(*columns).where(T.c.status == "queued", T.c.name.in_(names), T.c.run_at <= now),
        select(*columns).where(
            T.c.status == "running", T.c.name.in_(names), T.c.heartbeat_at < stale
        ),
    )


def _claim_values(worker: str, now: datetime) -> dict[str, Any]:
    return {
        "status": "running",
        "attempts": T.c.attempts + 1,
        "worker": worker,
        "started_at": now,
        "heartbeat_at": now,
        "finished_at": None,
        "key_lock": None,  # started: a new deferral with this key queues a new job
    }


def _mine(job_id: str, attempt: int, worker: str) -> Any:
    return and_(
        T.c.id == job_id,
        T.c.status == "running",
        T.c.worker == worker,
        T.c.attempts == attempt,
    )


class JobStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        # SQLite has one writer at a time: tasks of one process queue here instead of in
        # SQLite's busy handler, which sleeps (measured: 20 concurrent deferrals ran 4x slower).
        self._write_lock = asyncio.Lock() if db.dialect == "sqlite" else None
        self._fast_gate: Any = self._write_lock or asyncio.Semaphore(FAST_CONNECTIONS)
        self._idle: list[AsyncConnection] = []
        self._opened: set[AsyncConnection] = set()

    @contextlib.asynccontextmanager
    async def tx(self) -> AsyncIterator[AsyncConnection]:
        """A write transaction (Core only: no ORM session on the hot path)."""
        if self._write_lock is None:
            async with self.db.engine.begin() as conn:
                yield conn
            return
        async with self._write_lock, self.db.engine.begin() as conn:
            yield conn

    @contextlib.asynccontextmanager
    async def fast(self) -> AsyncIterator[AsyncConnection]:
        """Dedicated autocommit connections for the worker's single-statement writes (claim,
        heartbeat, progress, finish): no pool checkout, ping, BEGIN or COMMIT each time."""
        async with self._fast_gate:
            conn = self._idle.pop() if self._idle else None
            if conn is None or conn.invalidated:
                conn = await (await self.db.engine.connect()).execution_options(
                    isolation_level="AUTOCOMMIT"
                )
                self._opened.add(conn)
            try:
                yield conn
            except BaseException:  # its state is unknown (cancelled mid-statement): drop it
                self._opened.discard(conn)
                with contextlib.suppress(Exception):
                    await conn.close()
                raise
            self._idle.append(conn)

    async def close(self) -> None:
        opened, self._opened, self._idle = self._opened, set(), []
        for conn in opened:
            with contextlib.suppress(Exception):
                await conn.close()

    def read(self) -> Any:
        """A connection for reads (concurrent with writes on both backends)."""
        return self.db.engine.connect()

    # -- reading ------------------------------------------------------------------------

    async def get(self, job_id: str) -> Any:
        async with self.read() as s:
            return (await s.execute(select(T).where(T.c.id == job_id))).first()

    async def ids_starting(self, prefix: str) -> list[str]:
        """Up to two ids with this prefix, so a short id typed at the CLI can be resolved."""
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        async with self.read() as s:
            rows = await s.execute(
                select(T.c.id).where(T.c.id.like(f"{escaped}%", escape="\\")).limit(2)
            )
            return [r[0] for r in rows]

    async def list(
        self, status: str | None, name: str | None, limit: int, guild_id: str | None = None
    ) -> list[Any]:
        query = select(T).order_by(T.c.created_at.desc(), T.c.id).limit(limit)
        if guild_id is not None:  # the payload's "guild_id" (JSON on both backends)
            query = query.where(T.c.payload["guild_id"].as_string() == guild_id)
        if status is not None:
            query = query.where(T.c.status == status)
        if name is not None:
            query = query.where(T.c.name == name)
        async with self.read() as s:
            return list((await s.execute(query)).all())

    async def queued_key(self, conn: AsyncConnection, name: str, key: str) -> str | None:
        query = select(T.c.id).where(T.c.name == name, T.c.key_lock == key)
        return await conn.scalar(query)

    async def has_due(self, names: Iterable[str], now: datetime, stale: datetime) -> bool:
        query = _due(list(names), now, stale).limit(1)
        async with self.read() as s:
            return (await s.scalar(query)) is not None

    async def next_run_at(self, names: Iterable[str]) -> datetime | None:
        query = select(func.min(T.c.run_at)).where(
            T.c.name.in_(list(names)), T.c.status == "queued"
        )
        async with self.read() as s:
            return await s.scalar(query)

    # -- writing ------------------------------------------------------------------------

    async def insert(self, conn: AsyncConnection, values: dict[str, Any]) -> None:
        await conn.execute(insert(T).values(**values))

    async def set_engine_ref(self, conn: AsyncConnection, job_id: str, ref: int | None) -> None:
        await conn.execute(update(T).where(T.c.id == job_id).values(engine_ref=ref))

    async def claim_due(
        self, caps: dict[str, int], free: int, worker: str, now: datetime, stale: datetime
    ) -> list[Any]:
        """SQLite: claim due jobs, at most ``cap`` running per name across every process.

        Each UPDATE holds SQLite's write lock for the whole statement, so counting the
        running jobs and claiming new ones is atomic without SKIP LOCKED.
        """
        claimed: list[Any] = []
        async with self.fast() as s:
            due = _due(list(caps), now, stale, T.c.name).subquery()
            names = list((await s.execute(select(due.c.name).distinct())).scalars())
            for name in names:
                if free - len(claimed) <= 0:
                    break
                running = (
                    select(func.count())
                    .select_from(T)
                    .where(T.c.status == "running", T.c.name == name, T.c.heartbeat_at >= stale)
                    .scalar_subquery()
                )
                room = func.max(0, func.min(free - len(claimed), literal(caps[name]) - running))
                due = _due([name], now, stale, T.c.id, T.c.run_at, T.c.created_at).subquery()
                ids = (
                    select(due.c.id).order_by(due.c.run_at, due.c.created_at, due.c.id).limit(room)
                )
                stmt = (
                    update(T)
                    .where(T.c.id.in_(ids))
                    .values(**_claim_values(worker, now))
                    .returning(*T.c)
                )
                claimed += list((await s.execute(stmt)).all())
        return claimed

    async def claim_one(self, job_id: str, worker: str, now: datetime, stale: datetime) -> Any:
        """PostgreSQL: the engine handed us this job; take it unless it ended or runs elsewhere."""
        stmt = (
            update(T)
            .where(
                T.c.id == job_id,
                or_(
                    T.c.status == "queued",
                    and_(T.c.status == "running", T.c.heartbeat_at < stale),
                ),
            )
            .values(**_claim_values(worker, now))
            .returning(*T.c)
        )
        async with self.fast() as s:
            return (await s.execute(stmt)).first()

    async def heartbeat(self, held: dict[str, int], worker: str, now: datetime) -> dict[str, bool]:
        """Beat for the jobs still ours; returns id -> cancel requested (missing: lost)."""
        if not held:
            return {}
        alive: dict[str, bool] = {}
        async with self.fast() as s:
            for job_id, attempt in held.items():
                row = (
                    await s.execute(
                        update(T)
                        .where(_mine(job_id, attempt, worker))
                        .values(heartbeat_at=now)
                        .returning(T.c.cancel_requested)
                    )
                ).first()
                if row is not None:
                    alive[job_id] = bool(row[0])
        return alive

    async def report(
        self, job_id: str, attempt: int, worker: str, progress: tuple[int, int | None, str | None]
    ) -> None:
        done, total, note = progress
        async with self.fast() as s:
            await s.execute(
                update(T)
                .where(_mine(job_id, attempt, worker))
                .values(progress_done=done, progress_total=total, progress_note=note)
            )

    async def finish(
        self,
        job_id: str,
        attempt: int,
        worker: str,
        status: str,
        now: datetime,
        *,
        error_class: str | None = None,
        progress: tuple[int, int | None, str | None] | None = None,
    ) -> bool:
        values: dict[str, Any] = {"status": status, "finished_at": now, "heartbeat_at": None}
        if error_class is not None:
            values["error_class"] = error_class
        if progress is not None:
            values.update(progress_done=progress[0], progress_total=progress[1])
            values["progress_note"] = progress[2]
        async with self.fast() as s:
            result = await s.execute(
                update(T).where(_mine(job_id, attempt, worker)).values(**values)
            )
            return result.rowcount == 1

    async def requeue(
        self,
        conn: AsyncConnection,
        job_id: str,
        attempt: int,
        worker: str,
        run_at: datetime,
        *,
        error_class: str | None,
        count_attempt: bool,
        progress: tuple[int, int | None, str | None] | None = None,
    ) -> bool:
        """Back to the queue: a retry after a failure, or a job the stopping worker let go."""
        values: dict[str, Any] = {"status": "queued", "run_at": run_at, "heartbeat_at": None}
        if not count_attempt:
            values["attempts"] = T.c.attempts - 1
        if error_class is not None:
            values["error_class"] = error_class
        if progress is not None:
            values.update(progress_done=progress[0], progress_total=progress[1])
            values["progress_note"] = progress[2]
        result = await conn.execute(
            update(T).where(_mine(job_id, attempt, worker)).values(**values)
        )
        return result.rowcount == 1

    async def cancel_queued(self, conn: AsyncConnection, job_id: str, now: datetime) -> Any:
        """Queued -> cancelled (its key is free again); the row, or None if it was not queued."""
        stmt = (
            update(T)
            .where(T.c.id == job_id, T.c.status == "queued")
            .values(status="cancelled", key_lock=None, finished_at=now)
            .returning(T.c.id, T.c.engine_ref)
        )
        return (await conn.execute(stmt)).first()

    async def request_cancel(self, job_id: str) -> bool:
        async with self.fast() as s:
            result = await s.execute(
                update(T)
                .where(T.c.id == job_id, T.c.status == "running")
                .values(cancel_requested=True)
            )
            return result.rowcount == 1

    async def queued_ids_with_key(self, conn: AsyncConnection, name: str, key: str) -> list[str]:
        query = select(T.c.id).where(T.c.name == name, T.c.key == key, T.c.status == "queued")
        return list((await conn.execute(query)).scalars())

    async def requeue_finished(self, conn: AsyncConnection, job_id: str, now: datetime) -> Any:
        """A failed or cancelled job queued again with a fresh set of attempts."""
        stmt = (
            update(T)
            .where(T.c.id == job_id, T.c.status.in_(("failed", "cancelled")))
            .values(
                status="queued",
                attempts=0,
                run_at=now,
                finished_at=None,
                started_at=None,
                cancel_requested=False,
                heartbeat_at=None,
            )
            .returning(T.c.id, T.c.name, T.c.run_at)
        )
        return (await conn.execute(stmt)).first()

    async def prune_done(self, before: datetime) -> int:
        async with self.tx() as s:
            result = await s.execute(
                delete(T).where(T.c.status == "done", T.c.finished_at < before)
            )
            return result.rowcount or 0

    # -- schedules ----------------------------------------------------------------------

    async def advance_tick(
        self, conn: AsyncConnection, name: str, schedule: str, tick: datetime, now: datetime
    ) -> str:
        """``fired`` when this caller moved the schedule to ``tick`` (exactly one caller does),
        ``seeded`` when the schedule was first seen (nothing fires), ``old`` otherwise."""
        result = await conn.execute(
            update(S)
            .where(S.c.name == name, S.c.last_tick < tick)
            .values(last_tick=tick, schedule=schedule, updated_at=now)
        )
        if result.rowcount == 1:
            return "fired"
        if await conn.scalar(select(S.c.name).where(S.c.name == name)) is None:
            await conn.execute(
                insert(S).values(name=name, schedule=schedule, last_tick=tick, updated_at=now)
            )
            return "seeded"
        return "old"
