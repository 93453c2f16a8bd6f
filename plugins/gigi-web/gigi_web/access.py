"""Who the signed-in member is in a server, checked on every request the way a command
checks it: Discord's current permissions and roles (trusted for a few seconds at most),
then the kernel's policy engine decides each capability."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from gigi_core import Actor
from gigi_web import discord_api
from gigi_web.discord_api import UserGuild
from gigi_web.sessions import WebSession
from gigi_web.settings import WebSettings
from gigi_web.visibility import (
    ADMINISTRATOR,
    CATEGORY,
    MANAGE_THREADS,
    PRIVATE_THREAD,
    THREADS,
    GuildChannel,
    can_view,
)

# The capabilities each page needs (any one of them); admins (Manage Server) hold them all,
# a grant gives one. The LLM page is read with any /llm capability, as `/llm` lists are.
LLM_CAPABILITIES = ("llm.provider.write", "llm.provider.select", "llm.provider.test")
# Budgets are read as `/llm budget show` is (llm.usage.read); run traces are audit metadata.
PAGES: dict[str, tuple[str, ...]] = {
    "plugins": ("plugins.manage",),
    "grants": ("grants.manage",),
    "channels": ("gigi.channel.manage",),
    "memory": ("memory.manage.guild",),
    "knowledge": ("knowledge.manage",),
    "llm": LLM_CAPABILITIES,
    "budgets": ("llm.usage.read", "llm.provider.write"),
    "usage": ("llm.usage.read",),
    "runs": ("audit.read",),
    "jobs": ("gigi.jobs.manage",),
    "audit": ("audit.read",),
    "data": ("gigi.privacy.self",),
}
ADMIN_PAGES = tuple(page for page in PAGES if page != "data")
# Pages about one plugin's data: shown only where that plugin is enabled.
PLUGIN_PAGES = {"memory": "memory", "knowledge": "knowledge"}
T = TypeVar("T")
ChannelView = Literal["visible", "hidden", "gone"]
USER_ID = re.compile(r"[0-9]{1,20}", re.ASCII)
LOOKUPS_AT_ONCE = 8
MAX_NAMED = 20  # member names looked up in Discord for one page
NAMES_SECONDS = 60.0  # role and channel names only label ids on a page; no decision uses them


class Refused(Exception):
    """A request the member may not make; ``status`` and a text naming what to change."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status
        self.text = text


@dataclass(frozen=True)
class Member:
    guild: UserGuild
    actor: Actor


class Access:
    def __init__(self, kernel: Any, settings: WebSettings) -> None:
        self.kernel = kernel
        self.settings = settings
        self._bot: tuple[float, set[str]] = (0.0, set())
        self._names: dict[tuple[str, str], tuple[float, dict[str, str]]] = {}
        self._channels: dict[str, tuple[float, list[GuildChannel]]] = {}
        self._looked: dict[str, tuple[float, GuildChannel | None]] = {}
        # A page's lookups by id go a few at a time: Discord allows 50 requests a second.
        self._lookups = asyncio.Semaphore(LOOKUPS_AT_ONCE)

    async def _asking(self, lookup: Awaitable[T]) -> T:
        async with self._lookups:
            return await lookup

    def _fresh(self, at: float) -> bool:
        return time.monotonic() - at < self.settings.member_ttl

    async def bot_guilds(self) -> set[str]:
        at, ids = self._bot
        if not self._fresh(at):
            ids = await discord_api.bot_guild_ids(self.settings)
            self._bot = (time.monotonic(), ids)
        return ids

    async def names(self, kind: str, guild_id: str) -> dict[str, str]:
        """A server's role or channel names by id (for display only), kept for a minute."""
        key = (kind, guild_id)
        cached = self._names.get(key)
        if cached is not None and time.monotonic() - cached[0] < NAMES_SECONDS:
            return cached[1]
        read = discord_api.guild_roles if kind == "roles" else discord_api.guild_channels
        found = await read(self.settings, guild_id)
        if len(self._names) > 10_000:
            self._names.clear()
        self._names[key] = (time.monotonic(), found)
        return found

    async def member_names(self, guild_id: str, user_ids: Iterable[str]) -> dict[str, str]:
        """Members' names by id, for labels only (kept for a minute like role names); at
        most ``MAX_NAMED`` asked of Discord per page, the rest (and what is no Discord id,
        a pseudonym or a name) stay as they are."""
        out: dict[str, str] = {}
        wanted: list[str] = []
        for uid in dict.fromkeys(u for u in user_ids if u and USER_ID.fullmatch(u)):
            cached = self._names.get(("member", f"{guild_id}:{uid}"))
            if cached is not None and time.monotonic() - cached[0] < NAMES_SECONDS:
                out.update(cached[1])
            elif len(wanted) < MAX_NAMED:
                wanted.append(uid)
        found = await asyncio.gather(
            *(
                self._asking(discord_api.member_name(self.settings, guild_id, uid))
                for uid in wanted
            ),
            return_exceptions=True,
        )
        if len(self._names) > 10_000:
            self._names.clear()
        for uid, name in zip(wanted, found, strict=True):
            if isinstance(name, BaseException):  # rate-limited, down: a label, asked later
                if not isinstance(name, discord_api.DiscordError):
                    raise name
                continue
            named = {uid: name} if name else {}
            self._names[("member", f"{guild_id}:{uid}")] = (time.monotonic(), named)
            out.update(named)
        return out

    async def _channel_list(self, guild_id: str) -> list[GuildChannel]:
        """The server's channels with their overwrites: a decision's input, so trusted no
        longer than the member's roles are."""
        cached = self._channels.get(guild_id)
        if cached is not None and self._fresh(cached[0]):
            return cached[1]
        channels = await discord_api.guild_channel_list(self.settings, guild_id)
        if len(self._channels) > 10_000:
            self._channels.clear()
        self._channels[guild_id] = (time.monotonic(), channels)
        return channels

    def _sees(self, member: Member, channel: GuildChannel) -> bool:
        return can_view(
            channel,
            guild_id=member.guild.id,
            user_id=member.actor.id,
            roles=member.actor.roles,
            permissions=member.guild.permissions,
            owner=member.guild.owner,
        )

    async def visible_channels(self, member: Member) -> dict[str, str]:
        """The server's channels (not categories, not threads) the member can see in
        Discord now, by id."""
        channels = await self._channel_list(member.guild.id)
        return {c.id: c.name for c in channels if c.type != CATEGORY and self._sees(member, c)}

    async def channel_view(self, member: Member, channel_id: str) -> tuple[ChannelView, str]:
        """Whether the member can see ``channel_id`` in Discord now, and its name. Threads
        are not in the server's channel list: they are asked for by id and judged by their
        channel (a private one also needs Manage Threads). ``gone``: Discord knows no such
        channel in this server (deleted), so nobody's view of it is left to protect."""
        channels = {c.id: c for c in await self._channel_list(member.guild.id)}
        try:
            found = channels.get(channel_id) or await self._lookup(member.guild.id, channel_id)
            if found is None:
                return "gone", channel_id
            if found.type not in THREADS:
                return ("visible" if self._sees(member, found) else "hidden"), found.name
            parent_id = found.parent_id or ""
            parent = channels.get(parent_id) or await self._lookup(member.guild.id, parent_id)
        except discord_api.DiscordError as exc:
            if exc.status == 403:  # not even the bot may see it: nobody is shown it here
                return "hidden", channel_id
            raise
        sees = parent is not None and self._sees(member, parent)
        if found.type == PRIVATE_THREAD and not (
            member.guild.owner or member.guild.permissions & (ADMINISTRATOR | MANAGE_THREADS)
        ):
            sees = False
        return ("visible" if sees else "hidden"), found.name

    async def _lookup(self, guild_id: str, channel_id: str) -> GuildChannel | None:
        """A channel or thread missing from the server's list (a thread, or a channel newer
        than the list), by id: a decision's input, trusted as long as the list is."""
        if not channel_id:
            return None
        cached = self._looked.get(channel_id)
        if cached is not None and self._fresh(cached[0]):
            found = cached[1]
        else:
            found = await self._asking(discord_api.channel(self.settings, channel_id))
            if len(self._looked) > 10_000:
                self._looked.clear()
            self._looked[channel_id] = (time.monotonic(), found)
        return found if found is not None and found.guild_id == guild_id else None

    async def guilds(self, session: WebSession) -> list[UserGuild]:
        """The member's servers where the bot is too, as Discord reports them now."""
        cached = session.members.get("")
        if cached is not None and self._fresh(cached[0]):
            mine: list[UserGuild] = cached[1]
        else:
            mine = await discord_api.user_guilds(self.settings, _token(session))
            session.members = {"": (time.monotonic(), mine)}  # roles are re-read too
        present = await self.bot_guilds()
        return [g for g in mine if g.id in present]

    async def member(self, session: WebSession, guild_id: str) -> Member:
        """The member in ``guild_id``, or Refused (not signed in, not there, no bot)."""
        if not session.signed_in:
            raise Refused(401, "Sign in with Discord first.")
        guild = next((g for g in await self.guilds(session) if g.id == guild_id), None)
        if guild is None:
            raise Refused(404, "Gigi is not in that server, or you are not a member of it.")
        cached = session.members.get(guild_id)
        if cached is not None and self._fresh(cached[0]):
            return cached[1]
        roles = await discord_api.member_roles(self.settings, guild_id, str(session.user_id))
        if roles is None:
            raise Refused(404, "You are no longer a member of that server.")
        actor = Actor(
            id=str(session.user_id),
            roles=roles,
            is_admin=guild.manages,
            display_name=session.username,
        )
        found = Member(guild=guild, actor=actor)
        session.members[guild_id] = (time.monotonic(), found)
        return found

    async def holds(self, member: Member, capability: str) -> bool:
        decision = await self.kernel.policy.capability(member.actor, capability, member.guild.id)
        return bool(decision.allowed)

    async def plugin_on(self, member: Member, page: str) -> bool:
        """Whether the plugin ``page`` is about (if any) is enabled in the member's server."""
        plugin = PLUGIN_PAGES.get(page)
        if plugin is None:
            return True
        return plugin in await self.kernel.plugin_state.enabled_plugins(member.guild.id)

    async def allowed(self, member: Member, page: str) -> bool:
        if not await self.plugin_on(member, page):
            return False
        for capability in PAGES[page]:
            if await self.holds(member, capability):
                return True
        return False

    async def pages(self, member: Member) -> list[str]:
        return [page for page in PAGES if await self.allowed(member, page)]

    async def require(self, session: WebSession, guild_id: str, page: str) -> Member:
        """The member, if the policy engine allows ``page``'s capability; else Refused."""
        member = await self.member(session, guild_id)
        if not await self.plugin_on(member, page):
            raise Refused(
                404,
                f"The {PLUGIN_PAGES[page]} plugin is off in this server: an admin can enable "
                "it on the Plugins page first.",
            )
        if not await self.allowed(member, page):
            raise Refused(403, _needs(PAGES[page], "This page"))
        return member

    async def check(self, member: Member, capability: str) -> None:
        """Refused unless the member holds ``capability`` here (one action on a page)."""
        if not await self.holds(member, capability):
            raise Refused(403, _needs((capability,), "This change"))


def _needs(capabilities: tuple[str, ...], what: str) -> str:
    names = " or ".join(capabilities)
    return (
        f"{what} needs the {names} capability in this server: a server admin (Manage "
        "Server) can grant it to you or your role on the Grants page or with /gigi grants add."
    )


def _token(session: WebSession) -> str:
    if session.access_token is None:
        raise Refused(401, "Sign in with Discord first.")
    return session.access_token
