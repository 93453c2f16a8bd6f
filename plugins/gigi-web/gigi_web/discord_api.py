"""The few Discord API reads the dashboard needs: the member's servers and permissions (their
token), and the bot's servers, a member's roles, a server's roles and channels (bot token)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from gigi_core.llm import shared_http_client
from gigi_web.settings import WebSettings
from gigi_web.visibility import GuildChannel, channel_of

MANAGE_GUILD = 1 << 5
ADMINISTRATOR = 1 << 3


class DiscordError(Exception):
    """Discord answered with an error or not at all; the text is safe to show. ``status``:
    Discord's HTTP status, None when it could not be reached."""

    def __init__(self, text: str, status: int | None = None) -> None:
        super().__init__(text)
        self.status = status


@dataclass(frozen=True)
class DiscordUser:
    id: str
    name: str


@dataclass(frozen=True)
class UserGuild:
    """A server the member is in, as Discord reports it for their token right now."""

    id: str
    name: str
    permissions: int
    owner: bool

    @property
    def manages(self) -> bool:
        return self.owner or bool(self.permissions & (MANAGE_GUILD | ADMINISTRATOR))


def http() -> httpx.AsyncClient:
    """The kernel's pooled client for this loop (no redirects followed, bounded timeouts)."""
    return shared_http_client()


async def get_json(settings: WebSettings, path: str, authorization: str) -> Any:
    try:
        reply = await http().get(
            f"{settings.discord_api}{path}", headers={"Authorization": authorization}
        )
    except httpx.HTTPError as exc:
        raise DiscordError(f"Discord could not be reached ({type(exc).__name__})") from None
    if reply.status_code == 404:
        return None
    if reply.status_code != 200:
        raise DiscordError(
            f"Discord answered {reply.status_code} for {path.split('?')[0]}", reply.status_code
        )
    return reply.json()


def _bot(settings: WebSettings) -> str:
    return f"Bot {settings.bot_token}"


async def user_guilds(settings: WebSettings, token: str) -> list[UserGuild]:
    rows = await get_json(settings, "/users/@me/guilds", f"Bearer {token}") or []
    return [
        UserGuild(
            id=str(g["id"]),
            name=str(g.get("name", "")),
            permissions=int(g.get("permissions") or 0),
            owner=bool(g.get("owner")),
        )
        for g in rows
        if isinstance(g, dict) and "id" in g
    ]


async def bot_guild_ids(settings: WebSettings) -> set[str]:
    rows = await get_json(settings, "/users/@me/guilds", _bot(settings)) or []
    return {str(g["id"]) for g in rows if isinstance(g, dict) and "id" in g}


async def member_roles(settings: WebSettings, guild_id: str, user_id: str) -> frozenset[str] | None:
    """The member's role ids, or None when they are not (or no longer) in the server."""
    found = await get_json(settings, f"/guilds/{guild_id}/members/{user_id}", _bot(settings))
    if not isinstance(found, dict):
        return None
    return frozenset(str(r) for r in found.get("roles", []))


async def member_name(settings: WebSettings, guild_id: str, user_id: str) -> str | None:
    """How the server shows a member (nickname, display name, username); None when they
    are not in it."""
    found = await get_json(settings, f"/guilds/{guild_id}/members/{user_id}", _bot(settings))
    if not isinstance(found, dict):
        return None
    user = found.get("user") if isinstance(found.get("user"), dict) else {}
    for name in (found.get("nick"), user.get("global_name"), user.get("username")):
        if isinstance(name, str) and name:
            return name
    return None


async def guild_roles(settings: WebSettings, guild_id: str) -> dict[str, str]:
    rows = await get_json(settings, f"/guilds/{guild_id}/roles", _bot(settings)) or []
    return {str(r["id"]): str(r.get("name", "")) for r in rows if isinstance(r, dict)}


async def guild_channels(settings: WebSettings, guild_id: str) -> dict[str, str]:
    return {c.id: c.name for c in await guild_channel_list(settings, guild_id)}


async def guild_channel_list(settings: WebSettings, guild_id: str) -> list[GuildChannel]:
    """A server's channels with their types and permission overwrites (bot token)."""
    rows = await get_json(settings, f"/guilds/{guild_id}/channels", _bot(settings)) or []
    return [channel_of(c) for c in rows if isinstance(c, dict) and "id" in c]


async def channel(settings: WebSettings, channel_id: str) -> GuildChannel | None:
    """One channel or thread by id (bot token), with its parent and server; None when
    Discord knows none (deleted). A DiscordError with status 403 when the bot may not see
    it (a private thread it is not in)."""
    found = await get_json(settings, f"/channels/{channel_id}", _bot(settings))
    if not isinstance(found, dict) or "id" not in found:
        return None
    return channel_of(found)
