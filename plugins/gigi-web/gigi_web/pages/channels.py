"""What Gigi observes per channel: active, paused or secure (the `/gigi channel` commands).
Securing a channel tells every plugin to forget what it kept of it, so it asks to confirm."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from gigi_core.events import OBSERVATION_STATES
from gigi_web.access import Refused
from gigi_web.guards import checked_form, form_text
from gigi_web.pages.common import back, member_for, show


async def channel_list(request: Request, error: str | None = None, status: int = 200) -> Response:
    web, member = await member_for(request, "channels")
    guild_id = member.guild.id
    names = await web.access.names("channels", guild_id)
    states = await web.kernel.channels.states(guild_id)
    rows = [(cid, name, states.get(cid, "active")) for cid, name in names.items()]
    rows += [(cid, cid, state) for cid, state in states.items() if cid not in names]
    return await show(
        request, web, member, "channels.html", status=status, rows=rows,
        states=OBSERVATION_STATES, error=error,
    )  # fmt: skip


async def set_state(request: Request) -> Response:
    web, member = await member_for(request, "channels")
    guild_id = member.guild.id
    form = await checked_form(request)
    channel = form_text(form, "channel", limit=20)
    state = form_text(form, "state", limit=16)
    if channel not in await web.access.names("channels", guild_id):
        raise Refused(404, "That channel is not in this server; pick one from the list.")
    if state not in OBSERVATION_STATES:
        return await channel_list(
            request, error=f"Pick one of: {', '.join(OBSERVATION_STATES)}.", status=400
        )
    if state == "secure" and form.get("confirm") != "on":
        return await channel_list(
            request,
            error="Securing a channel makes every plugin forget what it kept of it: tick "
            '"I understand" next to the channel to confirm.',
            status=400,
        )
    change = await web.kernel.set_channel_state(guild_id, channel, state, by=member.actor.id)
    return back(request, f"/g/{guild_id}/channels", f"The channel is {change.after} now.")
