"""Editing a channel's recorded knowledge from the Knowledge page, as the commands do it:
an action marked done, reopened or cancelled (`/knowledge action update`) or given to
another member (`/knowledge action reassign`); a contradiction between two decisions
settled, the later replacing the earlier (`/knowledge decision supersede`) or both standing
(`/knowledge decision dismiss`); what the channel is for (`/knowledge context`).

Each is the knowledge plugin's own action, called as the signed-in member in the channel
picked on the page, so the policy engine decides and audits it as the command, and the
plugin's own rules apply (an action changed by its owner, whoever recorded it, or an
admin; a record of another channel is not found from this one). Only channels the member
can see in Discord are accepted; every id is checked whole before anything is called."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from gigi_core import GigiError
from gigi_web import discord_api
from gigi_web.access import Member, Refused
from gigi_web.app import Web
from gigi_web.guards import checked_form, form_text
from gigi_web.pages.common import back, member_for
from gigi_web.pages.knowledge import _visible, knowledge_page
from gigi_web.pages.tools import call
from gigi_web.params import RECORD_ID, SNOWFLAKE, form_id

# knowledge.action_update's statuses, as the page names them.
STATUSES = {"done": "done", "in_progress": "reopened (in progress)", "cancelled": "cancelled"}
RESOLUTIONS = {"supersede": "knowledge.decision_supersede", "dismiss": "knowledge.decision_dismiss"}
CONTEXT_TYPES = ("customer", "project", "team", "general")
# knowledge.context's free-text fields and their bounds (its args schema), as labelled here.
CONTEXT_TEXT = {"purpose": ("Purpose", 500), "tags": ("Tags", 300)}
CONTEXT_TEXT |= {"stakeholders": ("Stakeholders", 300), "related": ("Related channels", 300)}


async def _picked(request: Request) -> tuple[Web, Member, Any, str]:
    """The page's member, the form (its CSRF token checked) and its channel: one the member
    can see in Discord (else a 404), its id well-formed (else a 400)."""
    web, member = await member_for(request, "knowledge")
    form = await checked_form(request)
    channel = form_id(form, "channel", "Channel", SNOWFLAKE)
    await _visible(web, member, channel)
    return web, member, form, channel


async def _apply(
    request: Request, picked: tuple[Web, Member, Any, str], action: str,
    args: dict[str, Any], notice: Callable[[dict[str, Any]], str],
) -> Response:  # fmt: skip
    """Call the plugin's action as the member in the picked channel: back to the channel
    with ``notice(result)``, or the page again with the plugin's refusal."""
    web, member, _, channel = picked
    try:
        done = await call(web, member, action, args, channel)
    except GigiError as exc:
        return await knowledge_page(request, error=str(exc), status=400)
    return back(request, _home(member, channel), notice(done))


def _home(member: Member, channel: str) -> str:
    return f"/g/{member.guild.id}/knowledge?channel={channel}"


async def action_status(request: Request) -> Response:
    """Mark an action done, reopen it (in progress) or cancel it."""
    picked = await _picked(request)
    form = picked[2]
    action_id = form_id(form, "id", "Action", RECORD_ID)
    status = form_text(form, "status", limit=16)
    if status not in STATUSES:
        raise Refused(400, "Status (status): pick done, in_progress (reopen) or cancelled.")
    args = {"id": action_id, "status": status}
    return await _apply(
        request, picked, "knowledge.action_update", args,
        lambda done: f"Action {STATUSES[status]}: {done['action']['description']}",
    )  # fmt: skip


async def action_reassign(request: Request) -> Response:
    """Give an action to another member of this server (by their Discord id)."""
    picked = await _picked(request)
    web, member, form, _ = picked
    action_id = form_id(form, "id", "Action", RECORD_ID)
    owner = form_id(form, "owner", "New owner", SNOWFLAKE)
    name = await discord_api.member_name(web.settings, member.guild.id, owner)
    if name is None:
        raise Refused(
            400, f"New owner (owner): {owner} is not a member of this server; give a member's "
            "id (in Discord: right-click them, Copy User ID).",
        )  # fmt: skip
    return await _apply(
        request, picked, "knowledge.action_reassign", {"id": action_id, "owner": owner},
        lambda done: f"Action given to {name}: {done['action']['description']}",
    )  # fmt: skip


async def contradiction(request: Request) -> Response:
    """Settle a contradiction note: the later decision supersedes the earlier, or dismiss
    the note (both decisions stay active)."""
    picked = await _picked(request)
    note_id = form_id(picked[2], "id", "Contradiction note", RECORD_ID)
    resolve = form_text(picked[2], "resolve", limit=16)
    if resolve not in RESOLUTIONS:
        raise Refused(400, "Settle (resolve): pick supersede or dismiss.")
    notice = (
        "The later decision now supersedes the earlier one."
        if resolve == "supersede"
        else "Dismissed: both decisions stay active."
    )
    return await _apply(request, picked, RESOLUTIONS[resolve], {"id": note_id}, lambda _: notice)


async def _context_changes(web: Web, member: Member, form: Any) -> dict[str, str]:
    """knowledge.context's arguments for the fields filled in (a blank one is left as it
    is); a 400 naming a field that is too long, a type not offered, or a related channel
    that is not one the member can see."""
    args: dict[str, str] = {}
    for name, (label, limit) in CONTEXT_TEXT.items():
        value = form.get(name)
        text = value.strip() if isinstance(value, str) else ""
        if len(text) > limit:
            raise Refused(400, f"{label} ({name}): at most {limit} characters.")
        if text:
            args[name] = text
    kind = form_text(form, "type", limit=16)
    if kind and kind not in CONTEXT_TYPES:
        raise Refused(400, f"Type (type): pick one of {', '.join(CONTEXT_TYPES)}.")
    if kind:
        args["type"] = kind
    if "related" in args:
        seen = await web.access.visible_channels(member)
        ids = [p.strip().lstrip("#") for p in args["related"].split(",") if p.strip()]
        for cid in ids:
            if not SNOWFLAKE.fullmatch(cid) or cid not in seen:
                raise Refused(
                    400,
                    "Related channels (related): channel ids separated by commas, each a "
                    "channel you can see in this server.",
                )
        args["related"] = ",".join(ids)
    return args


async def set_context(request: Request) -> Response:
    """Set what the channel is for: only the fields filled in are sent."""
    picked = await _picked(request)
    web, member, form, channel = picked
    args = await _context_changes(web, member, form)
    if not args:
        return back(request, _home(member, channel), "Nothing to change.")
    saved = f"Context saved: {', '.join(sorted(args))}."
    return await _apply(request, picked, "knowledge.context", args, lambda _: saved)
