"""The dashboard's ASGI app: ``create_app(kernel, settings)``; ``gigi web`` serves it."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from gigi_core import ConfigError
from gigi_web.access import Access, Refused
from gigi_web.discord_api import DiscordError
from gigi_web.guards import BodyLimit, SessionGuard, session_of
from gigi_web.sessions import SessionStore
from gigi_web.settings import WebSettings

log = logging.getLogger(__name__)
HERE = Path(__file__).parent


def template_env() -> Environment:
    """Autoescape on for every template: plugin names, descriptions, channel names and
    anything from messages are untrusted text."""
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = when
    return env


def when(iso: str | None, seconds: bool = False) -> str:
    """An ISO time from a plugin's answer as people read it: "2026-12-06 19:37" (UTC)."""
    return (iso or "")[: 19 if seconds else 16].replace("T", " ")


class Web:
    """What every page handler reaches through ``request.app.state.web``."""

    def __init__(self, kernel: Any, settings: WebSettings) -> None:
        self.kernel = kernel
        self.settings = settings
        self.access = Access(kernel, settings)
        self.templates = template_env()

    def render(self, request: Request, name: str, status: int = 200, **context: Any) -> Response:
        session = session_of(request)
        page = self.templates.get_template(name).render(
            csrf=session.csrf,
            user=session.username if session.signed_in else None,
            dev=self.settings.dev,
            **context,
        )
        return HTMLResponse(page, status_code=status)


def web_of(request: Request) -> Web:
    web: Web = request.app.state.web
    return web


async def _refused(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, Refused)
    if "session" not in request.state._state:  # refused before the session guard ran
        return HTMLResponse(exc.text, status_code=exc.status)
    return web_of(request).render(request, "error.html", status=exc.status, message=exc.text)


async def _discord_down(request: Request, exc: Exception) -> Response:
    log.warning("Discord API: %s", exc)
    return web_of(request).render(
        request,
        "error.html",
        status=502,
        message=f"{exc}. Try again in a minute.",
    )


def cookie_key(kernel: Any, settings: WebSettings) -> str:
    """What signs the session cookie: ``GIGI_WEB_SESSION_KEY`` if set, else a key derived
    from the kernel's secret key, so every process sharing that key (and the database)
    accepts the same cookies, and a restart keeps them valid."""
    if settings.session_key:
        return settings.session_key
    derived: str = kernel.state_sealer.keyed_hash(b"gigi-web:session-cookie")
    return derived


def create_app(kernel: Any, settings: WebSettings) -> Starlette:
    """The app; the caller owns the kernel (opens it before, closes it after). The kernel
    must have loaded this plugin ("web"): its migration made the sessions table."""
    if "web" not in kernel.registry.manifests:
        raise ConfigError(
            "the dashboard keeps its sessions in the web plugin's table, but the kernel did "
            "not load the web plugin (add it to GIGI_LOAD_PLUGINS, or open the kernel with it)"
        )
    from gigi_web.pages import routes

    all_routes: list[Any] = [
        *routes(),
        Mount("/static", app=StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(
        routes=all_routes,
        exception_handlers={Refused: _refused, DiscordError: _discord_down},
    )
    app.state.web = Web(kernel, settings)
    store = SessionStore(
        kernel.db.engine,
        lambda: kernel.state_sealer,
        settings.session_hours * 3600,
        burst=settings.rate_burst,
        max_sessions=settings.max_sessions,
        max_anonymous=settings.max_anonymous_sessions,
        recheck_seconds=settings.session_recheck_seconds,
    )
    app.state.sessions = store
    app.add_middleware(
        SessionGuard, settings=settings, store=store, signing_key=cookie_key(kernel, settings)
    )
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    return app


def dev_app(kernel: Any, settings: WebSettings) -> ASGIApp:
    """``gigi web --dev``: the dashboard plus a fake Discord under /_dev/discord, outside
    the dashboard's guards (the dashboard calls it server to server, like Discord)."""
    from gigi_web.fake_discord import FakeDiscord

    dashboard = create_app(kernel, settings)
    fake = FakeDiscord.dev_world(settings).app()
    prefix = "/_dev/discord"

    async def split(scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and path.startswith(prefix + "/"):
            inner = {**scope, "path": path[len(prefix) :], "root_path": prefix}
            await fake(inner, receive, send)
            return
        await dashboard(scope, receive, send)

    return split
