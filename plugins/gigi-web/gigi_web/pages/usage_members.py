"""The members who spent the most tokens in a server over 7, 30 or 90 days, by pseudonym
only ("member #1" spent the most). Its own page: it reads the per-member rollups
(``usage_by_actor``), not the plot's, at O(members x weeks) per request."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from gigi_core import ActorUsage, usage_by_actor
from gigi_web.pages.common import member_for, show
from gigi_web.pages.usage import RANGES, days_of

TOP_MEMBERS = 20
NO_MEMBER = "no member (plugins' and background work)"


def pseudonymised(rows: list[ActorUsage]) -> list[tuple[str, ActorUsage]]:
    """Each member as "member #N" by rank of spend over the period; calls no member made
    as such. No id or name reaches the page: the ranks mean nothing outside it."""
    out, rank = [], 0
    for row in rows:
        if row.actor_id is None:
            out.append((NO_MEMBER, row))
        else:
            rank += 1
            out.append((f"member #{rank}", row))
    return out


async def usage_members(request: Request) -> Response:
    web, member = await member_for(request, "usage")
    days = days_of(request)
    rows = await usage_by_actor(web.kernel.db, member.guild.id, days=days, limit=TOP_MEMBERS)
    return await show(
        request, web, member, "usage_members.html", members=pseudonymised(rows),
        top=TOP_MEMBERS, days=days, ranges=RANGES,
    )  # fmt: skip
