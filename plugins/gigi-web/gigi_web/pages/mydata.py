"""Every member's own data in a server: what each plugin keeps, export it as a file, delete
it after a confirmation (the kernel's privacy API, as `/gigi privacy` uses it)."""

from __future__ import annotations

import json

from starlette.requests import Request
from starlette.responses import Response

from gigi_web.guards import checked_form, form_text
from gigi_web.pages.common import member_for, show


async def data_page(request: Request) -> Response:
    web, member = await member_for(request, "data")
    statements = await web.kernel.privacy.statements(member.guild.id)
    return await show(request, web, member, "mydata.html", statements=statements, result=None)


async def export(request: Request) -> Response:
    web, member = await member_for(request, "data")
    data = await web.kernel.privacy.export(member.actor.id, member.guild.id)
    body = json.dumps(data, indent=2, sort_keys=True, default=str)
    name = f"gigi-data-{member.guild.id}-{member.actor.id}.json"
    return Response(
        body,
        media_type="application/json",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


async def delete(request: Request) -> Response:
    web, member = await member_for(request, "data")
    if request.method == "GET":
        return await show(request, web, member, "delete.html", error=None)
    form = await checked_form(request)
    if form_text(form, "confirm").lower() != "delete":
        return await show(
            request, web, member, "delete.html", status=400,
            error='Type the word "delete" in the box to confirm.',
        )  # fmt: skip
    result = await web.kernel.privacy.delete(member.actor.id, member.guild.id, by=member.actor.id)
    statements = await web.kernel.privacy.statements(member.guild.id)
    return await show(request, web, member, "mydata.html", statements=statements, result=result)
