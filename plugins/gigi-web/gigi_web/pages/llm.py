"""The server's LLM set-up, as `/llm credential` and `/llm profile` do it: API keys are
write-only (a fingerprint suffix is all that is shown), profiles point a purpose at a key
and a model. Each change is checked against its own capability."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from gigi_core import GigiError
from gigi_web.guards import checked_form, form_text
from gigi_web.pages.common import back, member_for, show

WRITE, SELECT = "llm.provider.write", "llm.provider.select"
PURPOSES = ("chat", "reasoning", "routing", "embedding")


def owner(guild_id: str) -> str:
    return f"guild:{guild_id}"


async def llm_page(request: Request, error: str | None = None, status: int = 200) -> Response:
    web, member = await member_for(request, "llm")
    llm = web.kernel.llm
    guild = owner(member.guild.id)
    return await show(
        request, web, member, "llm.html", status=status, error=error,
        credentials=await llm.list_credentials(guild),
        profiles=await llm.list_profiles(guild),
        providers=[p["name"] for p in llm.describe_providers()],
        purposes=PURPOSES,
        can_write=await web.access.holds(member, WRITE),
        can_select=await web.access.holds(member, SELECT),
    )  # fmt: skip


async def _change(request: Request, capability: str, change: Any) -> Response:
    web, member = await member_for(request, "llm")
    await web.access.check(member, capability)
    form = await checked_form(request)
    try:
        notice = await change(web.kernel.llm, owner(member.guild.id), form, member.actor.id)
    except GigiError as exc:  # names what to fix, never a key
        return await llm_page(request, error=str(exc), status=400)
    return back(request, f"/g/{member.guild.id}/llm", notice)


async def add_credential(request: Request) -> Response:
    async def change(llm: Any, guild: str, form: Any, by: str) -> str:
        label = form_text(form, "label", limit=64)
        key = form_text(form, "api_key", limit=4096)
        if not label or not key:
            raise GigiError("Give the key a label and paste the API key.")
        base_url = form_text(form, "base_url", limit=512) or None
        provider = form_text(form, "provider", limit=64)
        cred = await llm.add_credential(
            guild, provider, label, key, base_url=base_url, by=by, checked_url=True
        )
        return f"Stored the key {cred.label} (…{cred.fingerprint_suffix})."

    return await _change(request, WRITE, change)


async def revoke_credential(request: Request) -> Response:
    async def change(llm: Any, guild: str, form: Any, by: str) -> str:
        label = form_text(form, "label", limit=64)
        await llm.revoke_credential(guild, label, by=by)
        return f"Revoked the key {label}; its sealed value is destroyed."

    return await _change(request, WRITE, change)


async def set_profile(request: Request) -> Response:
    async def change(llm: Any, guild: str, form: Any, by: str) -> str:
        purpose = form_text(form, "purpose", limit=16)
        model = form_text(form, "model", limit=200)
        if not model:
            raise GigiError("Enter a model id, like gpt-4o-mini.")
        label = form_text(form, "credential", limit=64)
        await llm.set_profile(guild, purpose, label, model, by=by)
        return f"The {purpose} purpose uses {model} now."

    return await _change(request, SELECT, change)


async def remove_profile(request: Request) -> Response:
    async def change(llm: Any, guild: str, form: Any, by: str) -> str:
        purpose = form_text(form, "purpose", limit=16)
        removed = await llm.remove_profile(guild, purpose, by=by)
        return f"Removed the {purpose} profile." if removed else "There was no such profile."

    return await _change(request, SELECT, change)
