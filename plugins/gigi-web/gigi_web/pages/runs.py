"""A server's agent runs and one run's trace, as `gigi agent list|trace` show them:
metadata only (status, why it ended, steps, calls, tokens, decisions), never a prompt,
a message, an argument or a result."""

from __future__ import annotations

import re

from starlette.requests import Request
from starlette.responses import Response

from gigi_core import GigiError, recent_runs
from gigi_core.surfaces import trace_lines
from gigi_web.access import Refused
from gigi_web.pages.common import member_for, show

RUN_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
STATUSES = ("running", "awaiting_confirmation", "done", "failed", "cancelled")


async def run_list(request: Request) -> Response:
    web, member = await member_for(request, "runs")
    wanted = request.query_params.get("status", "")
    status = wanted if wanted in STATUSES else None
    runs = await recent_runs(web.kernel.db, member.guild.id, status=status, limit=50)
    channels = await web.access.names("channels", member.guild.id)
    people = await web.access.member_names(member.guild.id, [r.actor_id for r in runs])
    return await show(
        request, web, member, "runs.html", runs=runs, channels=channels, people=people,
        statuses=STATUSES, chosen=status or "",
    )  # fmt: skip


async def run_trace(request: Request) -> Response:
    web, member = await member_for(request, "runs")
    run_id = request.path_params["run_id"]
    missing = Refused(404, "This server has no run with that id; pick one from Agent runs.")
    if not RUN_ID.fullmatch(run_id):
        raise missing
    try:
        data = await web.kernel.agent.trace(run_id)
    except GigiError:
        raise missing from None
    if data.get("guild_id") != member.guild.id:  # another server's run: as if there were none
        raise missing
    return await show(request, web, member, "trace.html", run_id=run_id, lines=trace_lines(data))
