"""The audit log of a server: who did what and with what outcome, filtered and paged.
Metadata only: the log holds no message text, arguments or secrets to show."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from gigi_core import AuditFilter, GigiError, query_audit
from gigi_core.llm import parse_since
from gigi_web.pages.common import member_for, show
from gigi_web.params import query_int

FILTERS = ("actor", "action", "outcome", "since")


async def audit_page(request: Request) -> Response:
    web, member = await member_for(request, "audit")
    q = request.query_params
    chosen = {k: q.get(k, "").strip()[:128] for k in FILTERS}
    before = query_int(q.get("before"), "before", 1, 2**63 - 1, None)
    error = None
    try:
        since = parse_since(chosen["since"] or None)
    except GigiError:
        since, error = None, "Since: use e.g. 7d, 24h or a date like 2026-01-31."
    page = await query_audit(
        web.kernel.db,
        AuditFilter(
            guild_id=member.guild.id,
            actor_id=chosen["actor"] or None,
            action=chosen["action"] or None,
            outcome=chosen["outcome"] or None,
            since=since,
            before_id=before,
            limit=50,
        ),
    )
    channels = await web.access.names("channels", member.guild.id)
    return await show(
        request, web, member, "audit.html", rows=page.rows, next_before=page.next_before_id,
        chosen=chosen, channels=channels, error=error,
    )  # fmt: skip
