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
    """Sessions by id, expiring; ``rotate`` gives a signed-in member a fresh id (no fixation)."""

    def __init__(self, lifetime_seconds: float, *, max_sessions: int = 50_000) -> None:
        self.lifetime = lifetime_seconds
        self.max_sessions = max_sessions
        self._by_id: dict[str, WebSession] = {}

    def get(self, sid: Any) -> WebSession | None:
        if not isinstance(sid, str):
            return None
        found = self._by_id.get(sid)
        if found is not None and found.expires < time.monotonic():
            del self._by_id[sid]
            return None
        return found

    def new(self, burst: float) -> WebSession:
        if len(self._by_id) >= self.max_sessions:
            self._sweep()
        now = time.monotonic()
        session = WebSession(
            sid=secrets.token_urlsafe(32),
            csrf=secrets.token_urlsafe(32),
            expires=now + self.lifetime,
            tokens=burst,
            refilled=now,
        )
        self._by_id[session.sid] = session
        return session

    def rotate(self, old: WebSession, burst: float) -> WebSession:
        """A new id and CSRF token for a session that just signed in; the old id is dead."""
        self._by_id.pop(old.sid, None)
        fresh = self.new(burst)
        fresh.tokens, fresh.refilled = old.tokens, old.refilled
        return fresh

    def drop(self, session: WebSession) -> None:
        self._by_id.pop(session.sid, None)

    def _sweep(self) -> None:
        now = time.monotonic()
        for sid in [s for s, v in self._by_id.items() if v.expires < now]:
            del self._by_id[sid]
        while len(self._by_id) >= self.max_sessions:  # oldest out first
            self._by_id.pop(next(iter(self._by_id)))


def take_token(session: WebSession, per_minute: float, burst: float) -> bool:
    """A token bucket per session: ``burst`` at once, then ``per_minute`` on average."""
    now = time.monotonic()
    session.tokens = min(burst, session.tokens + (now - session.refilled) * per_minute / 60.0)
    session.refilled = now
    if session.tokens < 1.0:
        return False
    session.tokens -= 1.0
    return True
