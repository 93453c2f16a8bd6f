"""Memory's server-wide policy and purging one channel or all of them, as `/memory policy`
and `/memory purge` do them: through the memory plugin's own actions as the signed-in
member, so the policy engine decides and the calls are audited like the commands. A purge
cannot be undone: it has a confirmation page, then runs on the kernel's confirmed path."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from gigi_core import GigiError, PolicyDenied
from gigi_core.surfaces import Request as AgentRequest
from gigi_web.access import Member, Refused
from gigi_web.app import Web
from gigi_web.guards import checked_form, form_text
from gigi_web.pages.common import back, member_for, show
from gigi_web.pages.memory import HIDDEN, memory_page
from gigi_web.pages.tools import call
from gigi_web.params import ascii_int

STORAGE_ORDER = ("encrypted", "index_only", "metadata_only")  # each keeps less than the last
EMBEDDINGS = ("local", "profile", "off")


def _switch(form: Any, name: str) -> bool | None:
    value = form_text(form, name, limit=4)
    return {"yes": True, "no": False}.get(value)


def _policy_changes(form: Any, current: dict[str, Any]) -> dict[str, Any]:
    """The action's arguments for what the form changes; a GigiError naming the field."""
    args: dict[str, Any] = {}
    for name in ("enabled", "allow_bots"):
        value = _switch(form, name)
        if value is not None and value != current.get(name):
            args[name] = value
    days = form_text(form, "retention_days", limit=5)
    retention = ascii_int(days, 1, 3650)
    if days and retention is None:
        raise GigiError("Default retention (days): a whole number from 1 to 3650.")
    if retention is not None and retention != current.get("retention_days"):
        args["retention_days"] = retention
    storage = form_text(form, "storage", limit=16)
    if storage and storage not in STORAGE_ORDER:
        raise GigiError(f"Storage: pick one of {', '.join(STORAGE_ORDER)}.")
    if storage and storage != current.get("storage"):
        if _stricter(storage, current.get("storage")) and form.get("confirm_storage") != "on":
            raise GigiError(
                "Storage: a stricter mode rewrites what is stored and cannot be undone; tick "
                '"I understand" next to Storage to confirm.'
            )
        args["storage"] = storage
    embeddings = form_text(form, "embeddings", limit=8)
    if embeddings and embeddings not in EMBEDDINGS:
        raise GigiError(f"Search by meaning: pick one of {', '.join(EMBEDDINGS)}.")
    if embeddings and embeddings != current.get("embeddings"):
        args["embeddings"] = embeddings
    redaction = current.get("redaction") or {}
    for name, key in (("redact_emails", "emails"), ("redact_phones", "phones")):
        value = _switch(form, name)
        if value is not None and value != redaction.get(key):
            args[name] = value
    for name in ("redact_add", "redact_remove"):
        if text := form_text(form, name, limit=200):
            args[name] = text
    return args


def _stricter(new: str, old: Any) -> bool:
    return old in STORAGE_ORDER and STORAGE_ORDER.index(new) > STORAGE_ORDER.index(old)


async def set_policy(request: Request) -> Response:
    """Change the server's memory policy: only the fields the form changes are sent."""
    web, member = await member_for(request, "memory")
    form = await checked_form(request)
    try:
        current = (await call(web, member, "memory.status", {}))["policy"]
        args = _policy_changes(form, current)
        if not args:
            return back(request, f"/g/{member.guild.id}/memory", "Nothing to change.")
        done = await call(web, member, "memory.policy", args)
    except GigiError as exc:
        return await memory_page(request, error=str(exc), status=400)
    notice = f"Saved: {', '.join(done.get('changed') or sorted(args))}."
    if "rewritten" in done:
        notice += f" {done['rewritten']} stored message(s) rewritten to the stricter mode."
    for extra in ("note", "redaction_problem"):
        if done.get(extra):
            notice += f" {str(done[extra]).capitalize()}."
    return back(request, f"/g/{member.guild.id}/memory", notice)


@dataclass(frozen=True)
class PurgeTarget:
    """What a purge deletes: one channel (``channel`` set) or every channel of the server."""

    channel: str | None
    name: str
    messages: int
    channels: int = 1

    @property
    def args(self) -> dict[str, Any]:
        return {"channel": self.channel} if self.channel else {"everything": True}


async def _channel_to_purge(web: Web, member: Member, channel: str) -> PurgeTarget:
    """The channel's name and stored messages: a channel or thread of this server the
    member can see in Discord now (else a 403), or a deleted channel memory still holds
    messages of; else a 404."""
    view, name = await web.access.channel_view(member, channel)
    if view == "hidden":
        raise Refused(403, HIDDEN)
    state = await call(web, member, "memory.status", {})
    known = {c["channel_id"]: c for c in state["channels"]}
    messages = int((known.get(channel) or {}).get("messages", 0))
    if view == "gone" and not messages:  # a deleted thread's messages count under its channel
        raise Refused(404, "That channel is not in this server; pick one from the Memory page.")
    return PurgeTarget(channel, name, messages)


async def _everything_to_purge(web: Web, member: Member) -> PurgeTarget:
    """Every channel's stored messages, counted; a 403 when some are of a channel hidden
    from the member in Discord, since purging all would reach into it (and its count)."""
    visible = await web.access.visible_channels(member)
    state = await call(web, member, "memory.status", {})
    held = [c for c in state["channels"] if int(c.get("messages") or 0)]
    unseen = [c["channel_id"] for c in held if c["channel_id"] not in visible]
    views = await asyncio.gather(*(web.access.channel_view(member, cid) for cid in unseen))
    if any(view == "hidden" for view, _ in views):
        raise Refused(
            403,
            "Memory holds messages of channels you cannot see in Discord, so purging all of "
            "it is not offered to you: purge the channels you can see one by one, or ask a "
            "server admin who sees every channel.",
        )
    messages = sum(int(c["messages"]) for c in held)
    return PurgeTarget(None, "", messages, len(held))


async def _target(web: Web, member: Member, channel: str, everything: bool) -> PurgeTarget:
    if everything:
        return await _everything_to_purge(web, member)
    return await _channel_to_purge(web, member, channel)


async def purge_page(request: Request) -> Response:
    """What a purge deletes (one channel, or with ?everything=yes the whole server), and
    the form that confirms it."""
    web, member = await member_for(request, "memory")
    channel = (request.query_params.get("channel") or "")[:20]
    everything = request.query_params.get("everything") == "yes"
    return await _ask(request, web, member, await _target(web, member, channel, everything))


async def _ask(
    request: Request, web: Web, member: Member, target: PurgeTarget, error: str | None = None
) -> Response:
    return await show(
        request, web, member, "memory_purge.html", status=400 if error else 200, error=error,
        target=target,
    )  # fmt: skip


async def purge(request: Request) -> Response:
    """Delete everything memory holds of one channel, or of every channel, once the member
    confirmed it here."""
    web, member = await member_for(request, "memory")
    form = await checked_form(request)
    channel = form_text(form, "channel", limit=20)
    everything = form_text(form, "everything", limit=4) == "yes"
    target = await _target(web, member, channel, everything)
    if form.get("confirm") != "on":
        error = 'A purge cannot be undone: tick "I understand" to confirm it; nothing was deleted.'
        return await _ask(request, web, member, target, error)
    try:
        result = await _confirmed(web, member, "memory.purge", target.args, target.channel)
    except GigiError as exc:
        return await memory_page(request, error=str(exc), status=400)
    where = "of the channel" if target.channel else "of every channel in this server"
    notice = f"Purged {result.get('messages', 0)} stored message(s) {where}."
    return back(request, f"/g/{member.guild.id}/memory", notice)


async def _confirmed(
    web: Web, member: Member, action: str, args: dict[str, Any], channel_id: str | None
) -> Any:
    """An action the manifest asks to confirm, run as the member on the kernel's direct
    path (asked in the channel it is about, as the shell's `gigi memory` does) and approved
    by them, since they confirmed on this dashboard's page: the action's result."""
    agent = web.kernel.agent
    request = AgentRequest(
        actor=member.actor, guild_id=member.guild.id, channel_id=channel_id, kind="direct",
        text="",
    )  # fmt: skip
    try:
        reply = await agent.direct(request, action, args)
        if reply.status == "awaiting_confirmation" and reply.run_id:
            reply = await agent.confirm(reply.run_id, member.actor, guild_id=member.guild.id)
    except PolicyDenied as exc:
        raise Refused(
            403,
            f"{exc} A server admin (Manage Server) can grant the capability on the Grants "
            "page or with /gigi grants add.",
        ) from None
    if not reply.citations:  # the call did not run: the reply says why
        raise GigiError(reply.text or f"{action} did not run ({reply.status}).")
    return reply.citations[0].result
