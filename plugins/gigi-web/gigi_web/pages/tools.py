"""Pages that act through a plugin's own actions: ``kernel.call_tool`` with the signed-in
member as the actor, so the policy engine decides each call exactly as for a command, and
the call is audited like one."""

from __future__ import annotations

from typing import Any

from gigi_core import PolicyDenied
from gigi_web.access import Member, Refused


async def call(
    web: Any, member: Member, action: str, args: dict[str, Any], channel_id: str | None = None
) -> Any:
    """The action's result (asked in ``channel_id``, if given); a policy refusal is a 403
    naming what to change, any other refusal of the call (arguments, the plugin's own
    checks) a GigiError for the page."""
    try:
        outcome = await web.kernel.call_tool(
            action, args, actor=member.actor, guild_id=member.guild.id, channel_id=channel_id
        )
    except PolicyDenied as exc:
        raise Refused(
            403,
            f"{exc} A server admin (Manage Server) can grant the capability on the Grants "
            "page or with /gigi grants add.",
        ) from None
    return outcome.result
