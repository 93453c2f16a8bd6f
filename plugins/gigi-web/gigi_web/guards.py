"""What runs before every page: a body-size cap, per-session rate limits, the session
cookie (signed, HttpOnly, SameSite=Lax, Secure on https), an Origin check on every POST,
and the CSRF token every form carries. Sessions themselves live in the store
(``sessions.SessionStore``)."""

from __future__ import annotations

import hmac
import time
from typing import Any

from itsdangerous import BadSignature, URLSafeSerializer
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gigi_web.access import Refused
from gigi_web.sessions import PendingSignIn, SessionStore, WebSession, take_token
from gigi_web.settings import WebSettings

COOKIE = "gigi_session"
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
        b"frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]


class BodyLimit:
    """413 for a body over the cap, whether it says its length or streams it."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_bytes):
            await _too_large(self.max_bytes)(scope, receive, send)
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise Refused(413, _too_large_text(self.max_bytes))
            return message

        await self.app(scope, limited, send)


def _too_large_text(limit: int) -> str:
    return f"The request is larger than this dashboard accepts ({limit} bytes)."


def _too_large(limit: int) -> Response:
    return PlainTextResponse(_too_large_text(limit), status_code=413)


class SessionGuard:
    """Finds or starts the session, rate-limits it, checks POST origins, sets the cookie."""

    def __init__(
        self, app: ASGIApp, settings: WebSettings, store: SessionStore, signing_key: str
    ) -> None:
        self.app = app
        self.settings = settings
        self.store = store
        self.signer = URLSafeSerializer(signing_key, salt="gigi-web-session")
        self._by_address: dict[str, WebSession] = {}

    async def _session_of(self, request: Request) -> WebSession | None:
        raw = request.cookies.get(COOKIE)
        if not raw or len(raw) > 512:
            return None
        try:
            sid = self.signer.loads(raw)
        except BadSignature:
            return None
        return await self.store.get(sid)

    def _address_bucket(self, request: Request) -> WebSession:
        """Requests without a live session share a bucket per client address."""
        address = request.client.host if request.client else "?"
        bucket = self._by_address.get(address)
        if bucket is None:
            if len(self._by_address) > 10_000:
                self._by_address.clear()
            bucket = WebSession(
                sid="", csrf="", expires=0.0, tokens=self.settings.rate_burst,
                refilled=time.monotonic(),
            )  # fmt: skip
            self._by_address[address] = bucket
        return bucket

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        session = await self._session_of(request)
        bucket = session if session is not None else self._address_bucket(request)
        settings = self.settings
        if not take_token(bucket, settings.rate_per_minute, settings.rate_burst):
            response = PlainTextResponse(
                "Too many requests from this browser; wait a minute and try again.",
                status_code=429,
                headers={"Retry-After": "60"},
            )
            await response(scope, receive, send)
            return
        if request.method not in ("GET", "HEAD") and not self._same_origin(request):
            response = PlainTextResponse(
                "This form was sent from another site, so it was refused. Open the "
                "dashboard at its own address and submit the form there.",
                status_code=403,
            )
            await response(scope, receive, send)
            return
        started = session
        if session is None:  # nothing is stored for a visitor until a page needs it
            session = self.store.transient()
        scope.setdefault("state", {})["session"] = session

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += SECURITY_HEADERS
                current: WebSession = scope["state"]["session"]
                if current.sid and (started is None or current.sid != started.sid):
                    headers.append((b"set-cookie", self._cookie(current).encode("latin-1")))
                elif not current.sid and started is not None:  # signed out: forget the id
                    headers.append((b"set-cookie", self._expired_cookie().encode("latin-1")))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_cookie)

    def _same_origin(self, request: Request) -> bool:
        origin = request.headers.get("origin")
        if origin is None:
            referer = request.headers.get("referer", "")
            return referer.startswith(self.settings.origin + "/")
        return hmac.compare_digest(origin.encode(), self.settings.origin.encode())

    def _expired_cookie(self) -> str:
        secure = "; Secure" if self.settings.secure_cookies else ""
        return f"{COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0{secure}"

    def _cookie(self, session: WebSession) -> str:
        value = self.signer.dumps(session.sid)
        parts = [
            f"{COOKIE}={value}",
            "Path=/",
            "HttpOnly",
            "SameSite=Lax",
            f"Max-Age={int(self.settings.session_hours * 3600)}",
        ]
        if self.settings.secure_cookies:
            parts.append("Secure")
        return "; ".join(parts)


def session_of(request: Request) -> WebSession:
    session: WebSession = request.state.session
    return session


def replace_session(request: Request, session: WebSession) -> None:
    """After sign-in or sign-out: the response carries the new session's cookie."""
    request.state.session = session


async def keep_sign_in(request: Request, store: SessionStore, pending: PendingSignIn) -> None:
    """Keep a sign-in starting in the request's session: in its row, or in a new stored one
    for a visitor (whose response then sets the cookie)."""
    session = session_of(request)
    if session.sid and await store.begin_sign_in(session, pending):
        return
    replace_session(request, await store.new(pending, like=session))


async def checked_form(request: Request) -> FormData:
    """The POSTed form, if it carries this session's CSRF token; Refused otherwise."""
    form = await request.form(max_files=0, max_fields=200, max_part_size=64 * 1024)
    token = form.get("csrf")
    expected = session_of(request).csrf
    if (
        not expected  # a visitor without a stored session has no form to send
        or not isinstance(token, str)
        or not hmac.compare_digest(token.encode(), expected.encode())
    ):
        raise Refused(
            403,
            "This form has expired or did not come from this dashboard. Reload the page "
            "and submit it again.",
        )
    return form


def form_text(form: FormData, name: str, *, limit: int = 2000) -> str:
    value: Any = form.get(name, "")
    return value.strip()[:limit] if isinstance(value, str) else ""
