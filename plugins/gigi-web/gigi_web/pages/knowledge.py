"""A channel's team knowledge, as `/knowledge status|decisions|actions` show it: whether
extraction is on, and the decisions and actions recorded there. Read through the knowledge
plugin's own actions (kernel.call_tool as the member, in that channel), so the policy
engine decides and the reads are audited like commands."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from gigi_core import GigiError
from gigi_web.access import Refused
from gigi_web.pages.common import member_for, show
from gigi_web.pages.tools import call

LIMIT = 50


async def knowledge_page(request: Request) -> Response:
    web, member = await member_for(request, "knowledge")
    names = await web.access.names("channels", member.guild.id)
    channel = request.query_params.get("channel", "")[:20]
    found: dict[str, object] = {}
    error = None
    if channel:
        if channel not in names:
            raise Refused(404, "That channel is not in this server; pick one from the list.")
        try:
            found = {
                "status": await call(web, member, "knowledge.status", {}, channel),
                "decisions": await call(
                    web, member, "knowledge.decisions", {"status": "all", "limit": LIMIT}, channel
                ),
                "actions": await call(
                    web, member, "knowledge.actions", {"status": "all", "limit": LIMIT}, channel
                ),
            }
        except GigiError as exc:
            error = str(exc)
    return await show(
        request, web, member, "knowledge.html", channels=names, channel=channel,
        found=found, error=error, limit=LIMIT,
    )  # fmt: skip
