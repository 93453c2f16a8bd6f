"""A server's background jobs (syncs, embeddings, purges ...) and how far each has got, as
`gigi jobs list` shows them: names, states, progress and error classes, never a payload."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from gigi_core.jobs import STATUSES
from gigi_web.pages.common import member_for, show


async def job_list(request: Request) -> Response:
    web, member = await member_for(request, "jobs")
    wanted = request.query_params.get("status", "")
    status = wanted if wanted in STATUSES else None
    jobs = await web.kernel.jobs.list(status, 100, guild_id=member.guild.id)
    return await show(
        request, web, member, "jobs.html", jobs=jobs, statuses=STATUSES, chosen=status or ""
    )
