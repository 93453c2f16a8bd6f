"""A server's background jobs (syncs, embeddings, purges ...) and how far each has got, as
`gigi jobs list` shows them: names, states, progress and error classes, never a payload.
Cancelling and retrying one needs gigi.jobs.manage, as the page does; another server's job
is as if there were none."""

from __future__ import annotations

import re

from starlette.requests import Request
from starlette.responses import Response

from gigi_core.jobs import STATUSES, JobError, JobInfo, JobNotFound
from gigi_web.access import Member, Refused
from gigi_web.app import Web
from gigi_web.guards import checked_form, form_text
from gigi_web.pages.common import back, member_for, show

JOB_ID = re.compile(r"[0-9a-f]{32}")
CANCELLABLE = ("queued", "running")
RETRYABLE = ("failed", "cancelled")


async def job_list(request: Request, error: str | None = None, status: int = 200) -> Response:
    web, member = await member_for(request, "jobs")
    wanted = request.query_params.get("status", "")
    chosen = wanted if wanted in STATUSES else None
    jobs = await web.kernel.jobs.list(chosen, 100, guild_id=member.guild.id)
    return await show(
        request, web, member, "jobs.html", status=status, jobs=jobs, statuses=STATUSES,
        chosen=chosen or "", error=error, cancellable=CANCELLABLE, retryable=RETRYABLE,
    )  # fmt: skip


async def _this_servers_job(web: Web, member: Member, job_id: str) -> JobInfo:
    missing = Refused(404, "This server has no job with that id; pick one from the Jobs page.")
    if not JOB_ID.fullmatch(job_id):
        raise missing
    try:
        info: JobInfo = await web.kernel.jobs.get(job_id)
    except JobNotFound:
        raise missing from None
    if info.guild_id != member.guild.id:  # another server's job: as if there were none
        raise missing
    return info


async def cancel(request: Request) -> Response:
    """Cancel a queued job now, or ask a running one to stop (it ends cancelled)."""
    web, member = await member_for(request, "jobs")
    form = await checked_form(request)
    info = await _this_servers_job(web, member, form_text(form, "job", limit=64))
    if not await web.kernel.jobs.cancel(info.id, by=member.actor.id):
        return await job_list(
            request, error=f"That {info.name} job is {info.status} already: nothing to cancel.",
            status=400,
        )  # fmt: skip
    after = await web.kernel.jobs.get(info.id)
    notice = (
        f"Cancelled the {info.name} job."
        if after.status == "cancelled"
        else f"Asked the running {info.name} job to stop; it ends cancelled."
    )
    return back(request, f"/g/{member.guild.id}/jobs", notice)


async def retry(request: Request) -> Response:
    """Queue a failed or cancelled job again, with its full number of attempts."""
    web, member = await member_for(request, "jobs")
    form = await checked_form(request)
    info = await _this_servers_job(web, member, form_text(form, "job", limit=64))
    if info.status not in RETRYABLE:
        return await job_list(
            request, status=400,
            error=f"That {info.name} job is {info.status}: only a failed or cancelled job "
            "can be retried.",
        )  # fmt: skip
    try:
        await web.kernel.jobs.retry(info.id, by=member.actor.id)
    except JobError as exc:  # it changed state meanwhile
        return await job_list(request, error=f"{exc}.", status=400)
    return back(request, f"/g/{member.guild.id}/jobs", f"Queued the {info.name} job again.")
