"""Memory per channel, as `/memory status|enable|disable` show and change it: which channels
are remembered, for how long, and the server's storage mode. Changes call the memory
plugin's own actions through the kernel, so the policy engine decides and audits them.
Only channels the member can see in Discord are listed or accepted, as on the Knowledge
page: a memory.manage.guild grant is no way to learn about a channel one cannot read."""

from __future__ import annotations

import asyncio

from starlette.requests import Request
from starlette.responses import Response

from gigi_core import GigiError
from gigi_web.access import Member, Refused
from gigi_web.app import Web
from gigi_web.guards import checked_form, form_text
from gigi_web.pages.common import back, member_for, show
from gigi_web.pages.tools import call
from gigi_web.params import ascii_int

STORAGE = {
    "encrypted": "each message's text, sealed with the server's key, and its search words",
    "index_only": "each message's search words, not its text",
    "metadata_only": "ids, authors and times only, no text",
}
EMBEDDINGS = {
    "local": "Gigi's offline embedder",
    "profile": "the server's embedding model (the text goes to that provider)",
    "off": "words only",
}


HIDDEN = (
    "You cannot see that channel in Discord, so it is not offered here; pick one from the "
    "list, or ask a server admin for access to it in Discord."
)


async def visible_channel(web: Web, member: Member, channel: str) -> dict[str, str]:
    """The channels the member can see; a 403 when ``channel`` is a channel or thread of
    the server hidden from them in Discord (empty or deleted: no check here)."""
    visible = await web.access.visible_channels(member)
    if channel and channel not in visible:
        view, _ = await web.access.channel_view(member, channel)
        if view == "hidden":
            raise Refused(403, HIDDEN)
    return visible


async def memory_page(request: Request, error: str | None = None, status: int = 200) -> Response:
    web, member = await member_for(request, "memory")
    visible = await visible_channel(web, member, "")
    state = await call(web, member, "memory.status", {})
    known = {c["channel_id"]: c for c in state["channels"]}
    rows = [(cid, name, known.get(cid)) for cid, name in visible.items()]
    # Memory also holds threads with a mode of their own and channels since deleted: a
    # thread is shown where the member can see it, a deleted channel while messages are kept.
    others = [(cid, c) for cid, c in known.items() if cid not in visible]
    views = await asyncio.gather(*(web.access.channel_view(member, cid) for cid, _ in others))
    rows += [
        (cid, name, c)
        for (cid, c), (view, name) in zip(others, views, strict=True)
        if view == "visible" or (view == "gone" and int(c.get("messages") or 0))
    ]
    policy = state["policy"]
    shown = {cid: name for cid, name, _ in rows}
    # Only channels listed to the member are offered or counted: a hidden one adds nothing.
    on = [(cid, name) for cid, name, c in rows if c is not None and c.get("mode") == "on"]
    syncable = [(cid, name) for cid, name in on if cid in visible]  # a deleted one has no history
    syncs = [
        (shown[s["channel_id"]], s) for s in state.get("syncs", []) if s["channel_id"] in shown
    ]
    return await show(
        request, web, member, "memory.html", status=status, error=error, rows=rows,
        policy=policy, storage=STORAGE.get(policy.get("storage"), policy.get("storage")),
        storage_modes=STORAGE, embeddings=EMBEDDINGS, syncable=syncable, syncs=syncs,
        stored=sum(int(c.get("messages") or 0) for _, _, c in rows if c),
    )  # fmt: skip


async def set_channel(request: Request) -> Response:
    """Remember a channel (or change its retention), or stop remembering it."""
    web, member = await member_for(request, "memory")
    guild_id = member.guild.id
    form = await checked_form(request)
    channel = form_text(form, "channel", limit=20)
    if channel not in await visible_channel(web, member, channel):
        raise Refused(404, "That channel is not in this server; pick one from the list.")
    days = form_text(form, "retention_days", limit=5)
    try:
        if form_text(form, "mode", limit=8) == "off":
            await call(web, member, "memory.disable", {"channel": channel})
            return back(request, f"/g/{guild_id}/memory", "Nothing new is remembered there.")
        retention = ascii_int(days, 1, 3650)
        if days and retention is None:
            raise GigiError("Retention (days): a whole number from 1 to 3650, or blank.")
        args: dict[str, object] = {"channel": channel}
        if retention is not None:
            args["retention_days"] = retention
        done = await call(web, member, "memory.enable", args)
    except GigiError as exc:
        text = str(exc)
        if "retention" in text and not days:
            text += " On this page: fill in Retention (days) next to the channel."
        return await memory_page(request, error=text, status=400)
    notice = f"Remembered from now on, for {done['retention_days']} days."
    return back(request, f"/g/{guild_id}/memory", notice)


async def sync_channel(request: Request) -> Response:
    """Queue `/memory sync` for a remembered channel: the job runs where the bot runs, so the
    page says so and points at the Jobs page for its progress."""
    web, member = await member_for(request, "memory")
    guild_id = member.guild.id
    form = await checked_form(request)
    channel = form_text(form, "channel", limit=20)
    visible = await visible_channel(web, member, channel)
    if channel not in visible:
        raise Refused(404, "That channel is not in this server; pick one from the list.")
    days = form_text(form, "days", limit=5)
    try:
        since = ascii_int(days, 1, 3650)
        if days and since is None:
            raise GigiError(
                "Days (sync): a whole number from 1 to 3650, or blank for as far back as the "
                "channel's retention allows."
            )
        args: dict[str, object] = {"channel": channel}
        if since is not None:
            args["days"] = since
        done = await call(web, member, "memory.sync", args, channel_id=channel)
    except GigiError as exc:
        text = str(exc).replace(f"<#{channel}>", f"#{visible[channel]}")
        return await memory_page(request, error=text, status=400)
    running = " is already running" if "already" in str(done.get("message", "")) else " started"
    notice = (
        f"A sync of #{visible[channel]}{running}: it runs in the background; its progress "
        "shows on the Jobs page."
    )
    return back(request, f"/g/{guild_id}/memory#sync", notice)
