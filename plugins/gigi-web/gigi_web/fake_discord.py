"""A fake Discord: the OAuth2 authorize page and token endpoint (PKCE checked), and the API
reads the dashboard makes. Tests serve it on loopback; ``gigi web --dev`` mounts it so
anyone can try the dashboard without a Discord application. Never for production."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from markupsafe import escape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

MANAGE_GUILD = 1 << 5
SEND_MESSAGES = 1 << 11
VIEW_CHANNEL = 1 << 10


@dataclass
class FakeMember:
    permissions: int = SEND_MESSAGES | VIEW_CHANNEL
    roles: list[str] = field(default_factory=list)
    owner: bool = False


@dataclass
class FakeGuild:
    id: str
    name: str
    bot: bool = True
    roles: dict[str, str] = field(default_factory=dict)
    channels: dict[str, str] = field(default_factory=dict)
    members: dict[str, FakeMember] = field(default_factory=dict)
    # channel id -> its permission overwrites, as Discord sends them ({id, type, allow, deny})
    overwrites: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # thread id -> (name, its channel's id, type: 11 public, 12 private); never in the list
    threads: dict[str, tuple[str, str, int]] = field(default_factory=dict)


@dataclass
class Grant:
    """An authorization code handed out, waiting to be traded once."""

    user_id: str
    client_id: str
    redirect_uri: str
    challenge: str
    scope: str


class FakeDiscord:
    """Users, guilds and tokens in memory; ``app()`` is the ASGI app of both endpoints."""

    def __init__(self, client_id: str, client_secret: str, bot_token: str) -> None:
        self.client_id = client_id
        self.client_secret = client_secret
        self.bot_token = bot_token
        self.users: dict[str, str] = {}  # id -> username
        self.guilds: dict[str, FakeGuild] = {}
        self.codes: dict[str, Grant] = {}
        self.tokens: dict[str, str] = {}  # access token -> user id
        self.token_requests: list[dict[str, str]] = []
        self.revoked: list[str] = []  # access tokens revoked at sign-out
        self.revoke_down = False  # a test sets it: the revocation endpoint answers 503
        self.bot_locked_out: set[str] = set()  # channel ids the bot may not read (403)
        self.rate_limited: set[str] = set()  # user ids whose member lookups answer 429
        self.member_delay = 0.0  # seconds a member lookup takes (a test sets it)
        self.member_lookups = (0, 0)  # (in flight now, most at once)
        self.next_user: str | None = None  # who "clicks Authorize" when the page is skipped

    def add_user(self, user_id: str, name: str) -> None:
        self.users[user_id] = name

    def add_guild(self, guild: FakeGuild) -> FakeGuild:
        self.guilds[guild.id] = guild
        return guild

    @classmethod
    def dev_world(cls, settings: Any) -> FakeDiscord:
        """The try-out world of ``gigi web --dev``: an admin, a member, two servers."""
        fake = cls(settings.client_id, settings.client_secret, settings.bot_token)
        fake.add_user("1001", "ada-admin")
        fake.add_user("1002", "bob-member")
        fake.add_guild(
            FakeGuild(
                id="9001",
                name="Dev Server",
                roles={"7001": "Moderators", "7002": "Everyone else"},
                channels={"8001": "general", "8002": "announcements"},
                members={
                    "1001": FakeMember(permissions=MANAGE_GUILD, owner=True),
                    "1002": FakeMember(roles=["7002"]),
                },
            )
        )
        fake.add_guild(
            FakeGuild(
                id="9002", name="Book Club", members={"1001": FakeMember(), "1002": FakeMember()}
            )
        )
        return fake

    # -- OAuth2 --------------------------------------------------------------------------

    async def authorize(self, request: Request) -> Response:
        q = request.query_params
        if q.get("client_id") != self.client_id or q.get("code_challenge_method") != "S256":
            return HTMLResponse("invalid OAuth2 request", status_code=400)
        if self.next_user is not None:
            return self._approve(q, self.next_user)
        buttons = "".join(
            f'<li><a class="button" href="approve?{escape(urlencode({**q, "user": uid}))}">'
            f"Authorize as {escape(name)}</a></li>"
            for uid, name in self.users.items()
        )
        return HTMLResponse(
            "<!doctype html><title>Fake Discord</title><h1>Fake Discord sign-in</h1>"
            f"<p>Gigi asks for: {escape(q.get('scope', ''))}</p><ul>{buttons}</ul>"
        )

    async def approve(self, request: Request) -> Response:
        q = request.query_params
        if q.get("client_id") != self.client_id or q.get("user") not in self.users:
            return HTMLResponse("invalid OAuth2 request", status_code=400)
        return self._approve(q, q["user"])

    def _approve(self, q: Any, user_id: str) -> Response:
        code = secrets.token_urlsafe(16)
        self.codes[code] = Grant(
            user_id, q["client_id"], q.get("redirect_uri", ""), q.get("code_challenge", ""),
            q.get("scope", ""),
        )  # fmt: skip
        target = f"{q.get('redirect_uri')}?{urlencode({'code': code, 'state': q.get('state', '')})}"
        return RedirectResponse(target, status_code=302)

    async def token(self, request: Request) -> Response:
        form = await request.form()
        fields = {k: str(v) for k, v in form.items()}
        self.token_requests.append(fields)
        expected = base64.b64encode(f"{self.client_id}:{self.client_secret}".encode()).decode()
        if request.headers.get("authorization") != f"Basic {expected}":
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        grant = self.codes.pop(fields.get("code", ""), None)
        if grant is None or grant.redirect_uri != fields.get("redirect_uri"):
            return JSONResponse({"error": "invalid_grant"}, status_code=400)
        digest = hashlib.sha256(fields.get("code_verifier", "").encode()).digest()
        if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != grant.challenge:
            return JSONResponse({"error": "invalid_grant", "error_description": "PKCE"}, 400)
        access = secrets.token_urlsafe(24)
        self.tokens[access] = grant.user_id
        return JSONResponse(
            {"access_token": access, "token_type": "Bearer", "expires_in": 604800,
             "scope": grant.scope},
        )  # fmt: skip

    async def revoke(self, request: Request) -> Response:
        """RFC 7009 as Discord does it: the client authenticates, the token stops working."""
        form = await request.form()
        if self.revoke_down:
            return JSONResponse({"message": "Service Unavailable"}, status_code=503)
        expected = base64.b64encode(f"{self.client_id}:{self.client_secret}".encode()).decode()
        if request.headers.get("authorization") != f"Basic {expected}":
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        token = str(form.get("token", ""))
        if self.tokens.pop(token, None) is not None:
            self.revoked.append(token)
        return JSONResponse({})

    # -- API -----------------------------------------------------------------------------

    def _who(self, request: Request) -> str | None:
        """The user id of a Bearer token, "bot" for the bot token, None otherwise."""
        auth = request.headers.get("authorization", "")
        if auth == f"Bot {self.bot_token}":
            return "bot"
        if auth.startswith("Bearer "):
            return self.tokens.get(auth[7:])
        return None

    async def me(self, request: Request) -> Response:
        who = self._who(request)
        if who is None:
            return JSONResponse({"message": "401: Unauthorized"}, status_code=401)
        if who == "bot":
            return JSONResponse({"id": "5000", "username": "Gigi", "bot": True})
        return JSONResponse({"id": who, "username": self.users[who]})

    async def my_guilds(self, request: Request) -> Response:
        who = self._who(request)
        if who is None:
            return JSONResponse({"message": "401: Unauthorized"}, status_code=401)
        if who == "bot":
            return JSONResponse(
                [{"id": g.id, "name": g.name} for g in self.guilds.values() if g.bot]
            )
        return JSONResponse(
            [
                {"id": g.id, "name": g.name, "owner": m.owner, "permissions": str(m.permissions)}
                for g in self.guilds.values()
                if (m := g.members.get(who)) is not None
            ]
        )

    def _bot_guild(self, request: Request) -> FakeGuild | Response:
        if self._who(request) != "bot":
            return JSONResponse({"message": "401: Unauthorized"}, status_code=401)
        guild = self.guilds.get(request.path_params["guild_id"])
        if guild is None or not guild.bot:
            return JSONResponse({"message": "Unknown Guild"}, status_code=404)
        return guild

    async def member(self, request: Request) -> Response:
        guild = self._bot_guild(request)
        if isinstance(guild, Response):
            return guild
        user_id = request.path_params["user_id"]
        if self.member_delay:
            now, most = self.member_lookups
            self.member_lookups = (now + 1, max(most, now + 1))
            await asyncio.sleep(self.member_delay)
            self.member_lookups = (self.member_lookups[0] - 1, self.member_lookups[1])
        if user_id in self.rate_limited:
            return JSONResponse({"message": "You are being rate limited."}, status_code=429)
        found = guild.members.get(user_id)
        if found is None:
            return JSONResponse({"message": "Unknown Member"}, status_code=404)
        return JSONResponse({"user": {"id": user_id, "username": self.users.get(user_id)},
                             "roles": found.roles})  # fmt: skip

    async def roles(self, request: Request) -> Response:
        guild = self._bot_guild(request)
        if isinstance(guild, Response):
            return guild
        return JSONResponse([{"id": k, "name": v} for k, v in guild.roles.items()])

    async def channels(self, request: Request) -> Response:
        guild = self._bot_guild(request)
        if isinstance(guild, Response):
            return guild
        return JSONResponse(
            [
                {"id": k, "name": v, "type": 0,
                 "permission_overwrites": guild.overwrites.get(k, [])}
                for k, v in guild.channels.items()
            ]
        )  # fmt: skip

    async def channel(self, request: Request) -> Response:
        """``GET /channels/{id}``: a channel or thread of a server the bot is in."""
        if self._who(request) != "bot":
            return JSONResponse({"message": "401: Unauthorized"}, status_code=401)
        cid = request.path_params["channel_id"]
        if cid in self.bot_locked_out:
            return JSONResponse({"message": "Missing Access", "code": 50001}, status_code=403)
        for guild in self.guilds.values():
            if not guild.bot:
                continue
            if cid in guild.channels:
                return JSONResponse(
                    {"id": cid, "name": guild.channels[cid], "type": 0, "guild_id": guild.id,
                     "permission_overwrites": guild.overwrites.get(cid, [])}
                )  # fmt: skip
            if cid in guild.threads:
                name, parent, kind = guild.threads[cid]
                return JSONResponse(
                    {"id": cid, "name": name, "type": kind, "guild_id": guild.id,
                     "parent_id": parent}
                )  # fmt: skip
        return JSONResponse({"message": "Unknown Channel", "code": 10003}, status_code=404)

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/oauth2/authorize", self.authorize),
                Route("/oauth2/approve", self.approve),
                Route("/api/oauth2/token", self.token, methods=["POST"]),
                Route("/api/oauth2/token/revoke", self.revoke, methods=["POST"]),
                Route("/api/users/@me", self.me),
                Route("/api/users/@me/guilds", self.my_guilds),
                Route("/api/guilds/{guild_id}/members/{user_id}", self.member),
                Route("/api/guilds/{guild_id}/roles", self.roles),
                Route("/api/guilds/{guild_id}/channels", self.channels),
                Route("/api/channels/{channel_id}", self.channel),
            ]
        )
