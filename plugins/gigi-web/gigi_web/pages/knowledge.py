"""A channel's team knowledge, as `/knowledge status|decisions|actions|context` show it:
whether extraction is on, the decisions (and contradictions to settle) and actions recorded
there, and what the channel is for; turning extraction on or off, as `/knowledge
enable|disable` (editing what was recorded: knowledge_edit). Everything goes through the
knowledge plugin's own actions (kernel.call_tool as the member, in that channel), so the
policy engine decides and audits like commands. Only channels the member can see in
Discord are offered: a knowledge.manage grant is no way to read a channel one cannot read
in Discord."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from gigi_core import GigiError
from gigi_web.access import Member, Refused
from gigi_web.app import Web
from gigi_web.guards import checked_form, form_text
from gigi_web.pages.common import back, member_for, show
from gigi_web.pages.tools import call

LIMIT = 50


async def _visible(web: Web, member: Member, channel: str) -> dict[str, str]:
    """The channels the member can see; a 404 if ``channel`` (when given) is not one."""
    names = await web.access.visible_channels(member)
    if channel and channel not in names:
        raise Refused(
            404, "That channel is not one you can see in this server; pick one from the list."
        )
    return names


async def knowledge_page(request: Request, error: str | None = None, status: int = 200) -> Response:
    web, member = await member_for(request, "knowledge")
    channel = request.query_params.get("channel", "")[:20]
    if request.method == "POST":
        channel = form_text(await checked_form(request), "channel", limit=20)
    names = await _visible(web, member, channel)
    found: dict[str, Any] = {}
    people: dict[str, str] = {}
    if channel:
        try:
            listed = {"status": "all", "limit": LIMIT}
            found = {
                "status": await call(web, member, "knowledge.status", {}, channel),
                "decisions": await call(web, member, "knowledge.decisions", listed, channel),
                "actions": await call(web, member, "knowledge.actions", listed, channel),
            }
        except GigiError as exc:
            error = str(exc)
            found = {}
        if found:  # what the channel is for is a part of its own: its failure blanks no list
            found |= {"context": None, "context_error": None}
            try:
                context = await call(web, member, "knowledge.context", {}, channel)
                found["context"] = context["context"]
            except GigiError as exc:
                found["context_error"] = str(exc)
            ids = [a["owner_id"] for a in found["actions"]["actions"] if not a.get("owner_name")]
            for decision in found["decisions"]["decisions"]:
                ids += decision.get("decided_by") or []
            people = await web.access.member_names(member.guild.id, ids)
    return await show(
        request, web, member, "knowledge.html", status=status, channels=names, channel=channel,
        found=found, people=people, error=error, limit=LIMIT,
    )  # fmt: skip


async def set_extraction(request: Request) -> Response:
    """Turn extraction on (with an optional time zone for the summaries) or off."""
    web, member = await member_for(request, "knowledge")
    form = await checked_form(request)
    channel = form_text(form, "channel", limit=20)
    await _visible(web, member, channel)
    if not channel:
        raise Refused(404, "Pick a channel from the list first.")
    mode = form_text(form, "mode", limit=4)
    if mode not in ("on", "off"):
        return await knowledge_page(request, error="Extraction: pick on or off.", status=400)
    args: dict[str, object] = {"channel": channel}
    zone = form_text(form, "timezone", limit=64)
    if mode == "on" and zone:
        args["timezone"] = zone
    try:
        await call(
            web, member, f"knowledge.{'enable' if mode == 'on' else 'disable'}", args, channel
        )
    except GigiError as exc:
        text = str(exc)
        if "timezone" in text.lower() or "time zone" in text.lower():
            text += (
                " On this page: fix Time zone (an IANA name like Europe/Paris), or leave it blank."
            )
        return await knowledge_page(request, error=text, status=400)
    notice = (
        "Extraction is on here: new messages are read for decisions and actions, then discarded."
        if mode == "on"
        else "Extraction is off here; what was recorded stays."
    )
    return back(request, f"/g/{member.guild.id}/knowledge?channel={channel}", notice)
