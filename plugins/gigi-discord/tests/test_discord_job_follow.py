"""A command whose result names a job to follow has its reply edited with the job's
progress until the job ends (the ``{"job": {"id", "follow": true}}`` convention)."""

from __future__ import annotations

from typing import Any

from discord_world import world

from gigi_core import hookimpl

MANIFEST = """\
manifest_version: 1
plugin:
  name: syncer
  version: 0.0.1
  description: Queues a long job and follows it.
  data_statement: Stores nothing.
  capabilities:
    - {name: syncer.use, description: Start a sync, default: everyone}
actions:
  - name: syncer.go
    command: syncer go
    description: Start the job.
    safety: write
    capability: syncer.use
    confirm: never
    args:
      type: object
      properties: {fail: {type: boolean, description: Make it fail}}
      additionalProperties: false
"""


class Syncer:
    def __init__(self, tmp_path: Any) -> None:
        self.path = tmp_path / "syncer.yaml"
        self.path.write_text(MANIFEST)

    @hookimpl
    def register_manifests(self, register: Any) -> None:
        register(self.path)

    @hookimpl
    def register_tools(self, register: Any) -> None:
        register("syncer.go", self.go)

    @hookimpl
    def register_jobs(self, register: Any) -> None:
        register("syncer.work", self.work, retries=0)

    async def go(self, ctx: Any, fail: bool = False) -> dict[str, Any]:
        job_id = await ctx.kernel.jobs.defer("syncer.work", {"fail": fail})
        return {"message": "Sync started.", "job": {"id": job_id, "follow": True}}

    async def work(self, ctx: Any, fail: bool) -> None:
        for page in range(1, 4):
            await ctx.progress(page * 100, 300, "messages")
        if fail:
            raise RuntimeError("the secret reason stays in the worker's log")


def _shown(result: Any) -> str:
    return (result.followups[-1] if result.followups else result.response).content


def _edits(w: Any) -> list[str]:
    """Every content the bot PATCHed onto its interaction replies, in order."""
    return [
        r.json["content"]
        for r in w.env.http_requests
        if r.method == "PATCH" and "/webhooks/" in r.path and r.json and "content" in r.json
    ]


async def test_the_reply_shows_the_job_until_it_is_done(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GIGI_DISCORD_JOB_POLL_SECONDS", "0.02")
    async with world(tmp_path, [], extra=[("syncer", Syncer(tmp_path))]) as w:
        await w.kernel.enable_plugin(w.gid, "syncer")
        await w.kernel.jobs.start()  # the worker `gigi run` has
        result = await w.member.slash(w.channel, "syncer go")
        await w.env.settle()
        assert _shown(result) == "Sync started.\nDone."
        edits = _edits(w)
        assert edits[-1] == "Sync started.\nDone." and len(edits) == len(set(edits))
        assert all(e.startswith("Sync started.\n") for e in edits)


async def test_a_failed_job_is_reported_by_class_never_by_its_message(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("GIGI_DISCORD_JOB_POLL_SECONDS", "0.02")
    async with world(tmp_path, [], extra=[("syncer", Syncer(tmp_path))]) as w:
        await w.kernel.enable_plugin(w.gid, "syncer")
        await w.kernel.jobs.start()
        result = await w.member.slash(w.channel, "syncer go", fail=True)
        await w.env.settle()
        content = _shown(result)
        assert "Failed (RuntimeError)" in content and "`gigi jobs retry " in content
        assert not any("secret reason" in e for e in _edits(w))


def test_progress_lines_read_as_a_bar_then_how_it_ended() -> None:
    from datetime import UTC, datetime

    from gigi_discord.job_follow import progress_line

    from gigi_core.jobs import JobInfo, JobProgress

    now = datetime.now(UTC)

    def info(status: str, progress: JobProgress | None = None, attempts: int = 1) -> JobInfo:
        return JobInfo(
            "job_1", "x", status, attempts, 3, None, now, now, None, None, progress, None
        )

    assert progress_line(info("queued", attempts=0)) == "Queued…"
    assert progress_line(info("queued")) == "Waiting to retry (attempt 1)…"
    assert progress_line(info("running")) == "Working…"
    half = progress_line(info("running", JobProgress(150, 300, "pages")))
    assert half == "`██████░░░░░░` 150 / 300 — pages"
    assert progress_line(info("running", JobProgress(1200))) == "1,200 so far"
    assert progress_line(info("cancelled")) == "Cancelled."
