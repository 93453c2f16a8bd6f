"""``gigi jobs`` and ``gigi worker`` as operators use them, and worker processes that die."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys

from click.testing import CliRunner

from gigi_core.cli import cli
from gigi_core.cli.common import CliState
from gigi_core.testing import open_test_kernel
from tests.jobs.helpers import drain_until, until

PLUGIN = """
import asyncio, os
from gigi_core import hookimpl

@hookimpl
def register_jobs(register):
    register("clijobs.touch", touch)
    register("clijobs.fail", fail, retries=0)
    register("clijobs.slow", slow, retries=3, timeout=60)
    register("clijobs.polite", polite)

def note(path, line):
    with open(path, "a") as f:
        f.write(line + "\\n")

async def touch(ctx, path):
    await ctx.progress(1, 1)
    note(path, f"touch {ctx.job_id}")

async def fail(ctx):
    raise RuntimeError("not for the logs")

async def slow(ctx, path):
    note(path, f"start {ctx.attempt} {os.getpid()}")
    if ctx.attempt == 1:
        await asyncio.sleep(60)
    note(path, f"done {ctx.attempt}")

async def polite(ctx, path):
    note(path, f"start {ctx.attempt}")
    for _ in range(3000):
        if ctx.cancelled:
            note(path, "stopped")
            return
        await asyncio.sleep(0.02)
"""


def _gigi(database_url: str, monkeypatch):
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "clijobs")
    monkeypatch.setenv("GIGI_DATABASE_URL", database_url)
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(cli, list(args), obj=CliState(), catch_exceptions=False)

    return invoke


def test_worker_until_idle_and_the_jobs_commands(
    plugin_factory, database_url, tmp_path, monkeypatch
) -> None:
    plugin_factory.make("clijobs", module=PLUGIN)
    gigi = _gigi(database_url, monkeypatch)
    marker = tmp_path / "marker"
    result = gigi("jobs", "defer", "clijobs.touch", "--payload", json.dumps({"path": str(marker)}))
    assert result.exit_code == 0, result.output
    touch = result.output.strip()
    fail = gigi("jobs", "defer", "clijobs.fail").output.strip()
    listed = json.loads(gigi("jobs", "list", "--json").output)
    assert {j["id"]: j["status"] for j in listed} == {touch: "queued", fail: "queued"}

    result = gigi("worker", "--until-idle")
    assert result.exit_code == 0 and "Nothing left to run." in result.output
    assert marker.read_text() == f"touch {touch}\n"

    result = gigi("jobs", "list", "--json", "--status", "failed")
    [failed] = json.loads(result.output)
    assert failed["id"] == fail and failed["error_class"] == "RuntimeError"
    assert failed["attempts"] == 1 and "not for the logs" not in result.output
    shown = json.loads(gigi("jobs", "show", touch[:8], "--json").output)
    assert shown["status"] == "done" and shown["payload_keys"] == ["path"]
    assert shown["progress"] == {"done": 1, "total": 1, "note": None}
    assert str(marker) not in json.dumps(shown)  # the payload is shown by its keys only
    table = gigi("jobs", "list").output
    assert "clijobs.fail" in table and "failed" in table and "RuntimeError" in table

    assert "Queued job" in gigi("jobs", "retry", fail).output
    assert "Cancelled job" in gigi("jobs", "cancel", fail[:10]).output
    again = gigi("jobs", "cancel", fail)
    assert again.exit_code == 2 and "nothing to cancel" in again.output
    assert gigi("jobs", "wait", touch).exit_code == 0
    waited = gigi("jobs", "wait", fail)
    assert waited.exit_code == 1 and "cancelled" in waited.output
    unknown = gigi("jobs", "show", "ffffffff")
    assert unknown.exit_code == 2 and "no job has the id" in unknown.output
    bad = gigi("jobs", "defer", "clijobs.touch", "--payload", "[1]")
    assert bad.exit_code == 2 and "JSON object" in bad.output


def _worker_process(plugin_factory, database_url: str):
    env = {
        **os.environ,
        "GIGI_DATABASE_URL": database_url,
        "GIGI_LOAD_PLUGINS": "clijobs",
        "PYTHONPATH": os.pathsep.join([str(plugin_factory.root), *sys.path]),
    }
    return asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "from gigi_core.cli import main; main()",
        "worker",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def _stop(proc) -> None:
    if proc.returncode is None:
        proc.kill()
        await proc.wait()


async def test_a_job_runs_again_after_its_worker_is_killed(
    plugin_factory, database_url, tmp_path
) -> None:
    plugin_factory.make("clijobs", module=PLUGIN)
    marker = tmp_path / "marker"
    async with open_test_kernel(tmp_path, plugins=["clijobs"], database_url=database_url) as kernel:
        job_id = await kernel.jobs.defer("clijobs.slow", {"path": str(marker)})
        proc = await _worker_process(plugin_factory, database_url)
        try:
            await until(lambda: marker.exists() and "start 1" in marker.read_text(), within=30)
            running = await kernel.jobs.get(job_id)
            assert running.status == "running" and running.worker.split(":")[1] == str(proc.pid)
            proc.send_signal(signal.SIGKILL)  # kill -9: no heartbeat, no goodbye
            await proc.wait()
        finally:
            await _stop(proc)
        info = await drain_until(kernel, job_id, "done", within=15)
    assert info.attempts == 2
    lines = marker.read_text().splitlines()
    assert [line.split()[:2] for line in lines] == [["start", "1"], ["start", "2"], ["done", "2"]]
    assert lines[1].split()[2] == str(os.getpid())  # run again here, after the heartbeat expired


async def test_sigterm_stops_a_worker_gracefully(plugin_factory, database_url, tmp_path) -> None:
    plugin_factory.make("clijobs", module=PLUGIN)
    marker = tmp_path / "marker"
    async with open_test_kernel(tmp_path, plugins=["clijobs"], database_url=database_url) as kernel:
        job_id = await kernel.jobs.defer("clijobs.polite", {"path": str(marker)})
        proc = await _worker_process(plugin_factory, database_url)
        try:
            await until(lambda: marker.exists() and "start 1" in marker.read_text(), within=30)
            proc.send_signal(signal.SIGTERM)
            out, err = await asyncio.wait_for(proc.communicate(), 20)
        finally:
            await _stop(proc)
        assert proc.returncode == 0, err.decode()
        assert b"Stopping" in out and marker.read_text().splitlines() == ["start 1", "stopped"]
        info = await kernel.jobs.get(job_id)
        assert info.status == "queued" and info.attempts == 0  # runs again on the next worker
