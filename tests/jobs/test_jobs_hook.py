"""The ``register_jobs`` hook: what a plugin registers, and registrations that fail it."""

from __future__ import annotations

import pytest

from gigi_core import hookimpl
from gigi_core.jobs import JobContext
from gigi_core.plugins import LoadOptions, load_plugins
from gigi_core.testing import open_test_kernel

RAN: list[str] = []


async def tidy(ctx: JobContext, guild_id: str) -> None:
    RAN.append(guild_id)


class TidyPlugin:
    @hookimpl
    def register_jobs(self, register):
        register("tidy.run", tidy, concurrency=2, retries=5, timeout=60)
        register("tidy.nightly", tidy, schedule="0 3 * * *")


async def test_hook_register_jobs(database_url, tmp_path) -> None:
    RAN.clear()
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("tidy", TidyPlugin())], database_url=database_url
    ) as kernel:
        spec = kernel.registry.jobs["tidy.run"]
        assert (spec.concurrency, spec.retries, spec.timeout, spec.plugin) == (2, 5, 60, "tidy")
        assert kernel.registry.jobs["tidy.nightly"].schedule == "0 3 * * *"
        assert set(kernel.registry.records["tidy"].contributions.jobs) == {
            "tidy.run",
            "tidy.nightly",
        }
        job_id = await kernel.jobs.defer("tidy.run", {"guild_id": "g1"})
        await kernel.jobs.run_until_idle()
        assert RAN == ["g1"]
        info = await kernel.jobs.get(job_id)
        assert info.status == "done" and info.retries == 5


def sync_job(ctx):
    return None


@pytest.mark.parametrize(
    ("name", "fn", "options", "says"),
    [
        ("tidy.sync", sync_job, {}, "must be async"),
        ("nodots", tidy, {}, "must be dotted"),
        ("tidy.x", tidy, {"priority": 1}, "unknown option(s) priority"),
        ("tidy.x", tidy, {"concurrency": 0}, "concurrency must be"),
        ("tidy.x", tidy, {"retries": -1}, "retries must be"),
        ("tidy.x", tidy, {"timeout": 0}, "timeout must be"),
    ],
)
def test_a_bad_registration_fails_the_plugin(name, fn, options, says) -> None:
    class Bad:
        @hookimpl
        def register_jobs(self, register):
            register(name, fn, **options)

    loaded = load_plugins(LoadOptions(load=frozenset()), extra=[("bad", Bad())])
    record = loaded.registry.records["bad"]
    assert record.status == "failed" and says in record.error and name in record.error
