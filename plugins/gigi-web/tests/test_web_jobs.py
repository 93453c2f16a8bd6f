"""The jobs page: this server's background jobs (those whose payload names it) with their
progress, for holders of gigi.jobs.manage; never a payload value or an error message."""

from __future__ import annotations

from datetime import UTC, datetime

from web_world import ADMIN, ALPHA, BASE, BETA, MEMBER

from gigi_core import AuditFilter, query_audit

EVIL_NOTE = "<img src=x onerror=alert('job')>"
FAR_FUTURE = datetime(2999, 1, 1, tzinfo=UTC)


async def test_jobs_of_this_server_with_progress(dashboard) -> None:
    jobs = dashboard.kernel.jobs
    await dashboard.kernel.enable_plugin(ALPHA, "webnotes", by=ADMIN)
    await dashboard.kernel.enable_plugin(BETA, "webnotes", by=ADMIN)
    ran = await jobs.defer("webnotes.reindex", {"guild_id": ALPHA, "total": 8, "note": EVIL_NOTE})
    broke = await jobs.defer("webnotes.reindex", {"guild_id": ALPHA, "total": -2})
    beta = await jobs.defer("webnotes.reindex", {"guild_id": BETA, "total": 4, "note": "beta"})
    await jobs.run_until_idle()
    assert [j.id for j in await jobs.list(guild_id=ALPHA)] == [broke, ran]
    assert [j.id for j in await jobs.list(guild_id=BETA)] == [beta]

    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    page = await ada.client.get(f"/g/{ALPHA}/jobs")
    assert page.status_code == 200 and f'href="/g/{ALPHA}/jobs"' in page.text
    assert page.text.count("webnotes.reindex") == 2 and "beta" not in page.text
    assert "4 of 8" in page.text and "&lt;img src=x" in page.text and EVIL_NOTE not in page.text
    assert "ValueError" in page.text and "secret-looking" not in page.text
    failed = await ada.client.get(f"/g/{ALPHA}/jobs", params={"status": "failed"})
    assert failed.text.count("webnotes.reindex") == 1 and "4 of 8" not in failed.text


async def test_jobs_need_the_jobs_capability(dashboard) -> None:
    bob = dashboard.browser()
    await bob.sign_in(MEMBER)
    refused = await bob.client.get(f"/g/{ALPHA}/jobs")
    assert refused.status_code == 403 and "gigi.jobs.manage" in refused.text
    await dashboard.kernel.add_grant(ALPHA, "gigi.jobs.manage", "user", MEMBER, by=ADMIN)
    assert (await bob.client.get(f"/g/{ALPHA}/jobs")).status_code == 200


async def _alpha_and_beta_jobs(dashboard) -> tuple[str, str, str]:
    """A queued Alpha job, a failed Alpha job and a failed Beta job."""
    jobs = dashboard.kernel.jobs
    broke = await jobs.defer("webnotes.reindex", {"guild_id": ALPHA, "total": -2})
    beta = await jobs.defer("webnotes.reindex", {"guild_id": BETA, "total": -1})
    await jobs.run_until_idle()
    queued = await jobs.defer(
        "webnotes.reindex", {"guild_id": ALPHA, "total": 6}, run_at=FAR_FUTURE
    )
    return queued, broke, beta


async def test_cancel_and_retry_a_job_of_this_server(dashboard) -> None:
    kernel = dashboard.kernel
    queued, broke, beta = await _alpha_and_beta_jobs(dashboard)
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    page = await ada.client.get(f"/g/{ALPHA}/jobs")
    assert f'name="job" value="{queued}"' in page.text and ">Cancel<" in page.text
    assert f'name="job" value="{broke}"' in page.text and ">Retry<" in page.text

    done = await ada.post(f"/g/{ALPHA}/jobs/cancel", {"job": queued})
    assert done.status_code == 303
    assert (await kernel.jobs.get(queued)).status == "cancelled"
    assert "Cancelled the webnotes.reindex job" in (await ada.client.get(f"/g/{ALPHA}/jobs")).text
    again = await ada.post(f"/g/{ALPHA}/jobs/cancel", {"job": queued})
    assert again.status_code == 400 and "nothing to cancel" in again.text

    retried = await ada.post(f"/g/{ALPHA}/jobs/retry", {"job": broke})
    assert retried.status_code == 303
    assert (await kernel.jobs.get(broke)).status == "queued"
    not_failed = await ada.post(f"/g/{ALPHA}/jobs/retry", {"job": broke})
    assert not_failed.status_code == 400 and "only a failed or cancelled job" in not_failed.text

    # Beta's job, an unknown id and a malformed one are all "no such job here".
    for other in (beta, "0" * 32, "<script>"):
        for verb in ("cancel", "retry"):
            refused = await ada.post(f"/g/{ALPHA}/jobs/{verb}", {"job": other})
            assert refused.status_code == 404 and "<script>" not in refused.text
    assert (await kernel.jobs.get(beta)).status == "failed"
    rows = await query_audit(kernel.db, AuditFilter(guild_id=ALPHA, actor_id=ADMIN))
    kinds = [(r["kind"], r["action"]) for r in rows.rows]
    assert ("job.cancel", "webnotes.reindex") in kinds and (
        "job.retry",
        "webnotes.reindex",
    ) in kinds


async def test_cancel_and_retry_need_the_capability_and_the_token(dashboard) -> None:
    kernel = dashboard.kernel
    queued, broke, _ = await _alpha_and_beta_jobs(dashboard)
    bob = dashboard.browser()
    await bob.sign_in(MEMBER)
    for verb, job in (("cancel", queued), ("retry", broke)):
        refused = await bob.post(f"/g/{ALPHA}/jobs/{verb}", {"job": job})
        assert refused.status_code == 403 and "gigi.jobs.manage" in refused.text
    assert (await kernel.jobs.get(queued)).status == "queued"
    assert (await kernel.jobs.get(broke)).status == "failed"
    await kernel.add_grant(ALPHA, "gigi.jobs.manage", "user", MEMBER, by=ADMIN)
    no_token = await bob.client.post(
        f"/g/{ALPHA}/jobs/cancel", data={"job": queued}, headers={"Origin": BASE}
    )
    assert no_token.status_code == 403 and (await kernel.jobs.get(queued)).status == "queued"
    assert (await bob.post(f"/g/{ALPHA}/jobs/cancel", {"job": queued})).status_code == 303
    assert (await kernel.jobs.get(queued)).status == "cancelled"
