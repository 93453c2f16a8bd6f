"""Worker timings from the environment, checked once, with errors naming the variable."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from gigi_core.errors import ConfigError


def _number(name: str, default: float, *, minimum: float = 0.0, whole: bool = False) -> float:
    raw = os.environ.get(name) or ""
    if not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= minimum) or (whole and value != int(value)):
        kind = "a whole number" if whole else "a number of seconds"
        raise ConfigError(f"{name}: {raw!r} is not {kind} (at least {minimum:g})")
    return value


@dataclass(frozen=True)
class JobSettings:
    """How often workers poll and heartbeat, when a silent job counts as stalled, backoff."""

    poll_seconds: float = 1.0
    heartbeat_seconds: float = 5.0
    stall_seconds: float = 30.0
    retry_base_seconds: float = 10.0
    retry_max_seconds: float = 3600.0
    grace_seconds: float = 10.0
    batch: int = 10
    max_running: int = 20
    keep_done_days: float = 7.0
    worker_in_run: bool = True

    @classmethod
    def from_env(cls) -> JobSettings:
        heartbeat = _number("GIGI_JOBS_HEARTBEAT_SECONDS", 5.0, minimum=0.01)
        stall = _number("GIGI_JOBS_STALL_SECONDS", 30.0, minimum=0.05)
        if stall < 2 * heartbeat:
            raise ConfigError(
                f"GIGI_JOBS_STALL_SECONDS ({stall:g}) must be at least twice "
                f"GIGI_JOBS_HEARTBEAT_SECONDS ({heartbeat:g}), or live jobs look stalled"
            )
        in_run = (os.environ.get("GIGI_JOBS_IN_RUN") or "1").strip().lower()
        if in_run not in ("0", "1", "true", "false", "yes", "no", "on", "off"):
            raise ConfigError(f"GIGI_JOBS_IN_RUN: {in_run!r} is not 1 or 0")
        return cls(
            poll_seconds=_number("GIGI_JOBS_POLL_SECONDS", 1.0, minimum=0.01),
            heartbeat_seconds=heartbeat,
            stall_seconds=stall,
            retry_base_seconds=_number("GIGI_JOBS_RETRY_BASE_SECONDS", 10.0),
            retry_max_seconds=_number("GIGI_JOBS_RETRY_MAX_SECONDS", 3600.0),
            grace_seconds=_number("GIGI_JOBS_GRACE_SECONDS", 10.0),
            batch=int(_number("GIGI_JOBS_BATCH", 10, minimum=1, whole=True)),
            max_running=int(_number("GIGI_JOBS_MAX_RUNNING", 20, minimum=1, whole=True)),
            keep_done_days=_number("GIGI_JOBS_KEEP_DONE_DAYS", 7.0),
            worker_in_run=in_run in ("1", "true", "yes", "on"),
        )
