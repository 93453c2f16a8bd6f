"""What a job function receives (``JobContext``) and what ``kernel.jobs`` reports (``JobInfo``)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from gigi_core.jobs.errors import JobError

STATUSES = ("queued", "running", "done", "failed", "cancelled")
NOTE_LIMIT = 200
PROGRESS_EVERY = 0.25  # seconds between progress writes; the last value is always kept


@dataclass(frozen=True)
class JobProgress:
    done: int
    total: int | None = None
    note: str | None = None


@dataclass(frozen=True)
class JobInfo:
    """A job's metadata: never its payload values, never an error message (only the class)."""

    id: str
    name: str
    status: str
    attempts: int
    retries: int
    key: str | None
    run_at: datetime
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    progress: JobProgress | None
    error_class: str | None
    payload_keys: tuple[str, ...] = ()
    cancel_requested: bool = False
    worker: str | None = None
    # The guild the job works for (its payload's "guild_id"), so an admin surface can keep
    # one server's admins to that server's jobs; None for jobs of no guild.
    guild_id: str | None = None

    @classmethod
    def from_row(cls, row: Any) -> JobInfo:
        m = row._mapping if hasattr(row, "_mapping") else row
        progress = None
        if m["progress_done"] is not None:
            progress = JobProgress(m["progress_done"], m["progress_total"], m["progress_note"])
        payload = m["payload"] or {}
        return cls(
            id=m["id"],
            name=m["name"],
            status=m["status"],
            attempts=m["attempts"],
            retries=m["retries"],
            key=m["key"],
            run_at=aware(m["run_at"]),
            created_at=aware(m["created_at"]),
            started_at=aware(m["started_at"]),
            finished_at=aware(m["finished_at"]),
            progress=progress,
            error_class=m["error_class"],
            payload_keys=tuple(sorted(payload)) if isinstance(payload, dict) else (),
            cancel_requested=bool(m["cancel_requested"]),
            worker=m["worker"],
            guild_id=_guild_of(payload),
        )

    def as_dict(self, *, payload_keys: bool = False) -> dict[str, Any]:
        """JSON-ready; ``payload_keys`` only for ``jobs show`` (values are never shown)."""
        out: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "status": self.status,
            "attempts": self.attempts,
            "retries": self.retries,
            "key": self.key,
            "run_at": _iso(self.run_at),
            "created_at": _iso(self.created_at),
            "started_at": _iso(self.started_at),
            "finished_at": _iso(self.finished_at),
            "progress": None
            if self.progress is None
            else {
                "done": self.progress.done,
                "total": self.progress.total,
                "note": self.progress.note,
            },
            "error_class": self.error_class,
            "cancel_requested": self.cancel_requested,
        }
        if payload_keys:
            out["payload_keys"] = list(self.payload_keys)
            out["worker"] = self.worker
        return out


def _guild_of(payload: Any) -> str | None:
    guild = payload.get("guild_id") if isinstance(payload, dict) else None
    return guild if isinstance(guild, str) and guild else None


def aware(value: datetime | None) -> datetime | None:
    """Everything stored is UTC; SQLite returns it naive, PostgreSQL in the session's zone."""
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


Reporter = Callable[[int, int | None, str | None], Awaitable[None]]


class JobContext:
    """Handed to ``fn(ctx, **payload)``: who it is, progress reports, and whether to stop."""

    def __init__(
        self,
        *,
        job_id: str,
        name: str,
        attempt: int,
        key: str | None,
        kernel: Any,
        reporter: Reporter | None = None,
    ) -> None:
        self.job_id = job_id
        self.name = name
        self.attempt = attempt
        self.key = key
        self.kernel = kernel
        self._reporter = reporter
        self._stop_reason: str | None = None  # "cancel" | "stop" | "lost"
        self._seen_stop = False
        self._last_write = float("-inf")  # monotonic: the first report is written at once
        self.pending: JobProgress | None = None  # the latest report not yet written

    @property
    def cancelled(self) -> bool:
        """True once ``gigi jobs cancel`` hit this job or the worker is stopping: stop soon."""
        if self._stop_reason is not None:
            self._seen_stop = True
            return True
        return False

    async def progress(self, done: int, total: int | None = None, note: str | None = None) -> None:
        """Report how far the job is (shown by ``gigi jobs show`` and ``--wait``); cheap to call."""
        if not isinstance(done, int) or done < 0 or isinstance(done, bool):
            raise JobError(f"job {self.name}: progress done must be a whole number >= 0")
        if total is not None and (not isinstance(total, int) or total < 0):
            raise JobError(f"job {self.name}: progress total must be a whole number >= 0")
        if note is not None:
            note = str(note)[:NOTE_LIMIT]
        self.pending = JobProgress(done, total, note)
        now = time.monotonic()
        final = total is not None and done >= total
        if self._reporter is not None and (final or now - self._last_write >= PROGRESS_EVERY):
            self._last_write = now
            self.pending = None
            await self._reporter(done, total, note)
