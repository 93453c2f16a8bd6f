"""Server-side sessions: the signed cookie holds only a random id; the Discord access
token, the pending OAuth ``state`` and the CSRF token stay in this process's memory."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class PendingSignIn:
    """One sign-in in flight: its ``state`` is used once and expires."""

    state: str
    verifier: str
    expires: float


@dataclass
class WebSession:
    sid: str
    csrf: str
    expires: float
    user_id: str | None = None
    username: str | None = None
    access_token: str | None = None
    pending: PendingSignIn | None = None
    members: dict[str, tuple[float, Any]] = field(default_factory=dict)  # guild -> (at, info)
    flash: str | None = None  # one notice for the next page ("Saved.")
    tokens: float = 0.0  # rate-limit bucket
    refilled: float = 0.0

    @property
    def signed_in(self) -> bool:
        return self.user_id is not None


class SessionStore:
    """Sessions by id, expiring; ``rotate`` gives a signed-in member a fresh id (no fixation).

    Signed-in sessions and anonymous ones (a sign-in in flight) are kept and capped apart:
    a flood of anonymous visitors evicts only anonymous sessions, never a signed-in one.
    """

    def __init__(
        self,
        lifetime_seconds: float,
        *,
        max_sessions: int = 50_000,
        max_anonymous: int = 10_000,
    ) -> None:
        self.lifetime = lifetime_seconds
        self.max_sessions = max_sessions
        self.max_anonymous = max_anonymous
        self._by_id: dict[str, WebSession] = {}  # signed in
        self._anonymous: dict[str, WebSession] = {}

    def get(self, sid: Any) -> WebSession | None:
        if not isinstance(sid, str) or not sid:
            return None
        for kept in (self._by_id, self._anonymous):
            found = kept.get(sid)
            if found is not None:
                if found.expires < time.monotonic():
                    del kept[sid]
                    return None
                return found
        return None

    @staticmethod
    def transient(burst: float) -> WebSession:
        """A visitor's session that is not stored (no id, no CSRF token): pages that only
        show "sign in" need nothing kept; ``keep`` stores it once it holds something."""
        now = time.monotonic()
        return WebSession(sid="", csrf="", expires=now, tokens=burst, refilled=now)

    def new(self, burst: float) -> WebSession:
        """A stored anonymous session (a sign-in starting), evicting anonymous ones only."""
        session = self._fresh(burst)
        _make_room(self._anonymous, self.max_anonymous)
        self._anonymous[session.sid] = session
        return session

    def rotate(self, old: WebSession, burst: float) -> WebSession:
        """A new id and CSRF token for a session that just signed in; the old id is dead."""
        self.drop(old)
        fresh = self._fresh(burst)
        fresh.tokens, fresh.refilled = old.tokens, old.refilled
        _make_room(self._by_id, self.max_sessions)
        self._by_id[fresh.sid] = fresh
        return fresh

    def drop(self, session: WebSession) -> None:
        self._by_id.pop(session.sid, None)
        self._anonymous.pop(session.sid, None)

    def _fresh(self, burst: float) -> WebSession:
        now = time.monotonic()
        return WebSession(
            sid=secrets.token_urlsafe(32),
            csrf=secrets.token_urlsafe(32),
            expires=now + self.lifetime,
            tokens=burst,
            refilled=now,
        )


def _make_room(kept: dict[str, WebSession], cap: int) -> None:
    """Expired sessions out, then the oldest of this kind until one more fits."""
    if len(kept) < cap:
        return
    now = time.monotonic()
    for sid in [s for s, v in kept.items() if v.expires < now]:
        del kept[sid]
    while kept and len(kept) >= cap:
        kept.pop(next(iter(kept)))


def take_token(session: WebSession, per_minute: float, burst: float) -> bool:
    """A token bucket per session: ``burst`` at once, then ``per_minute`` on average."""
    now = time.monotonic()
    session.tokens = min(burst, session.tokens + (now - session.refilled) * per_minute / 60.0)
    session.refilled = now
    if session.tokens < 1.0:
        return False
    session.tokens -= 1.0
    return True
