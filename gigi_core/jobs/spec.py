"""A registered background job: its name, function, schedule and limits (validated at load)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from gigi_core.errors import PluginError

JOB_NAME = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$")


@dataclass(frozen=True)
class JobSpec:
    """``fn(ctx, **payload)`` runs at most ``concurrency`` at once, up to ``retries`` retries."""

    name: str
    fn: Callable[..., Awaitable[Any]]
    schedule: str | None = None  # a cron expression (five fields, UTC)
    concurrency: int = 1
    retries: int = 3
    timeout: float = 300.0
    plugin: str | None = None  # the plugin module that registered it

    def __post_init__(self) -> None:
        where = f"job {self.name!r}" + (f" of plugin {self.plugin}" if self.plugin else "")
        if not JOB_NAME.match(self.name):
            raise PluginError(f"{where}: the name must be dotted, like 'memory.ingest'")
        if not inspect.iscoroutinefunction(self.fn):
            raise PluginError(f"{where}: the function must be async (async def)")
        if not isinstance(self.concurrency, int) or self.concurrency < 1:
            raise PluginError(f"{where}: concurrency must be a whole number of at least 1")
        if not isinstance(self.retries, int) or self.retries < 0:
            raise PluginError(f"{where}: retries must be a whole number of at least 0")
        if not self.timeout > 0:
            raise PluginError(f"{where}: timeout must be a positive number of seconds")
        if self.schedule is not None:
            check_cron(self.schedule, where)


def check_cron(expression: str, where: str) -> None:
    """A cron string that does not parse is a start-up error naming the plugin and job."""
    from croniter import croniter

    if not isinstance(expression, str) or not croniter.is_valid(expression):
        raise PluginError(f"{where}: schedule {expression!r} is not a valid cron expression")
