"""`gigi memory sync --wait` from a shell while another process's worker runs the job, on the
same database (both backends): the progress lines, and the exit code for done, failed and
cancelled."""

from __future__ import annotations

import asyncio
import io
import re
from collections.abc import AsyncIterator
from typing import Any

import click
import gigi_memory
import pytest
from click.testing import CliRunner, Result
from gigi_memory.admin.sync_progress import SyncProgress
from memory_helpers import enable
from memory_history import GatedHistory, history

from gigi_core.jobs import JobProgress
from gigi_core.store.sealing import generate_key
from gigi_core.testing import open_test_kernel

KEY = generate_key()


@pytest.fixture
async def bot(database_url, tmp_path, monkeypatch) -> AsyncIterator[Any]:
    """The bot's process: memory on in c1, a history reader, a started worker."""
    monkeypatch.setenv("GIGI_SECRET_KEY", KEY)
    monkeypatch.setenv("GIGI_DATABASE_URL", database_url)
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "memory")
    monkeypatch.setenv("GIGI_JOBS_POLL_SECONDS", "0.05")  # SQLite: sees the shell's job soon
    async with open_test_kernel(
        tmp_path, plugins=["memory"], database_url=database_url, secret_key=KEY
    ) as k:
        await k.enable_plugin("g1", "memory")
        await enable(k, "c1")
        await k.jobs.start()
        yield k


def shell(*args: str) -> Result:
    """``gigi memory sync --guild g1 --channel c1 --wait``: its own kernel, its own loop."""

    @click.group()
    def root() -> None:
        pass

    gigi_memory.register_commands(root)
    return CliRunner().invoke(
        root, ["memory", "sync", "--guild", "g1", "--channel", "c1", "--wait", *args]
    )


async def job_of(kernel) -> Any:
    async with asyncio.timeout(15):
        while True:  # the shell's kernel queues it: a poll of the shared database
            if jobs := await kernel.jobs.list(name="memory.sync"):
                return jobs[0]
            await asyncio.sleep(0.05)


async def until_progress(kernel, done: int) -> None:
    async with asyncio.timeout(15):
        while True:
            info = await job_of(kernel)
            if info.progress is not None and info.progress.done >= done:
                return
            await asyncio.sleep(0.05)


async def test_wait_shows_progress_and_exits_0_when_done(bot) -> None:
    reader = GatedHistory(history(250))
    bot.history.register("fake", reader)
    out = asyncio.create_task(asyncio.to_thread(shell))
    await until_progress(bot, 100)
    await asyncio.sleep(1.2)  # the shell polls every 0.5 s: it has shown page 1
    reader.go.set()
    result = await out
    assert result.exit_code == 0, result.output
    job = await job_of(bot)
    assert f"Syncing c1: the messages Gigi may remember are added. (job {job.id})" in result.stdout
    lines = [line for line in result.stderr.splitlines() if line.startswith("read ")]
    assert lines[0] == "read 100 messages, 100 remembered"
    assert lines[-1] == "read 250 messages, 250 remembered"
    assert job.status == "done"


async def test_wait_exits_non_zero_when_the_sync_fails(bot) -> None:
    reader = GatedHistory(history(250), forbid_from=2)
    reader.go.set()
    bot.history.register("fake", reader)
    result = await asyncio.to_thread(shell)
    job = await job_of(bot)
    assert job.status == "failed"
    assert result.exit_code == 1
    assert f"the sync ended failed (HistoryForbidden); see gigi jobs show {job.id}" in (
        result.output
    )


async def test_wait_exits_non_zero_when_the_sync_is_cancelled(bot) -> None:
    reader = GatedHistory(history(250))
    bot.history.register("fake", reader)
    out = asyncio.create_task(asyncio.to_thread(shell))
    await asyncio.wait_for(reader.reading.wait(), 15)
    assert await bot.jobs.cancel((await job_of(bot)).id)
    reader.go.set()
    result = await out
    assert (await job_of(bot)).status == "cancelled"
    assert result.exit_code == 1 and "the sync ended cancelled" in result.output


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_wait_draws_a_bar_beside_the_counts() -> None:
    screen = Terminal()
    shown = SyncProgress("Syncing c1", file=screen)
    for done in (100, 100, 200, 250):  # a poll that saw no change draws nothing new
        shown.show(JobProgress(done, None, f"{done} remembered"))
    shown.close(finished=True)
    frames = [f for f in screen.getvalue().split("\r") if f.strip()]
    assert re.search(r"Syncing c1  \[#+\]  read 250 messages, 250 remembered", frames[-1])
    assert sum("read 100 messages" in f for f in frames) == 1
    assert screen.getvalue().endswith("\n")


def test_piped_the_wait_prints_a_line_per_change() -> None:
    log = io.StringIO()
    shown = SyncProgress("Syncing c1", file=log)
    for done in (100, 100, 250):
        shown.show(JobProgress(done, None, f"{done} remembered"))
    shown.close(finished=True)
    assert log.getvalue().splitlines() == [
        "read 100 messages, 100 remembered",
        "read 250 messages, 250 remembered",
    ]
