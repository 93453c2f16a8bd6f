"""The jobs page: this server's background jobs (those whose payload names it) with their
progress, for holders of gigi.jobs.manage; never a payload value or an error message."""

from __future__ import annotations

from web_world import ADMIN, ALPHA, BETA, MEMBER

EVIL_NOTE = "<img src=x onerror=alert('job')>"


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
