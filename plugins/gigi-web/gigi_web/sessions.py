"""Sessions kept in the store (the table ``web_sessions``, SQLite or PostgreSQL), so a
restart of ``gigi web`` signs nobody out and several ``gigi web`` processes on one
database share sign-ins.

What is stored, per session that holds something (a sign-in in flight, or a member
signed in): the SHA-256 hash of the session id, the CSRF token, the expiry, the Discord
user id and username, and two sealed values. The signed cookie carries only the random
256-bit id; the row is keyed by its hash and never holds the id, so someone who reads the
database cannot turn a row back into a cookie.

The Discord access token is **sealed** (AES-256-GCM under the kernel's state key,
``kernel.state_sealer``, as guild memory and ambient history are), bound to the row's
hash, rather than left out of the store: the dashboard needs it on every page whose
server list is older than ``member_ttl`` (it asks Discord which servers the member is
in), so a token kept only in memory would make every restart and every other dashboard
process ask for sign-in again — exactly what storing sessions is for. A database reader
without the key gets neither the token nor the pending sign-in (its ``state`` and PKCE
verifier), which is sealed the same way, expires with it, and is taken at most once
(an atomic conditional update: two callbacks racing in two processes cannot both use it).

Per process, in memory only: the member/permission cache, the rate-limit bucket and the
flash notice. A row read is trusted for ``recheck_seconds`` (5 by default): a page load
costs at most one read by primary key, and a sign-out in another process is honoured
here within that bound (at once in the process that signed out).

Signed-in sessions and anonymous ones (a sign-in in flight) are capped apart: a flood of
anonymous visitors evicts only anonymous rows (soonest to expire first), never a signed-in
one. Expired rows are deleted when read, by each process every ``sweep_seconds``, and by
the hourly job ``web.sessions_sweep``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from gigi_core import Sealed
from gigi_web.tables import sessions as table

log = logging.getLogger(__name__)


def hash_id(sid: str) -> str:
    """What the store keys a session by: SHA-256 of the id (hex)."""
    return hashlib.sha256(sid.encode("utf-8")).hexdigest()


@dataclass
class PendingSignIn:
    """One sign-in in flight: its ``state`` is used once and expires (epoch seconds)."""

    state: str
    verifier: str
    expires: float


@dataclass
class WebSession:
    sid: str
    csrf: str
    expires: float  # epoch seconds
    user_id: str | None = None
    username: str | None = None
    access_token: str | None = None  # unsealed in memory only
    members: dict[str, tuple[float, Any]] = field(default_factory=dict)  # guild -> (at, info)
    flash: str | None = None  # one notice for the next page ("Saved.")
    tokens: float = 0.0  # rate-limit bucket
    refilled: float = 0.0
    checked: float = 0.0  # monotonic time the row was last read or written

    @property
    def signed_in(self) -> bool:
        return self.user_id is not None

    @property
    def id_hash(self) -> str:
        return hash_id(self.sid)


def _associated(id_hash: str, what: str) -> str:
    return f"web-session:{id_hash}:{what}"


class SessionStore:
    """Sessions by id in the store; ``rotate`` gives a member who signed in a fresh id (no
    fixation) and deletes the old row; ``drop`` deletes a session's row."""

    def __init__(
        self,
        engine: Any,
        sealer: Callable[[], Any],
        lifetime_seconds: float,
        *,
        burst: float,
        max_sessions: int = 50_000,
        max_anonymous: int = 10_000,
        recheck_seconds: float = 5.0,
        sweep_seconds: float = 600.0,
    ) -> None:
        self.engine = engine
        self._sealer_of = sealer  # the kernel's state sealer, made on first use
        self._sealer: Any = None
        self.lifetime = lifetime_seconds
        self.burst = burst
        self.max_sessions = max_sessions
        self.max_anonymous = max_anonymous
        self.recheck = recheck_seconds
        self.sweep_every = sweep_seconds
        self._swept = -sweep_seconds  # the first request sweeps
        # Sessions this process has seen lately, for their in-memory parts (rate bucket,
        # permission cache, flash) and the recheck bound; at most as many as may be stored.
        self._live: OrderedDict[str, WebSession] = OrderedDict()
        self._live_cap = max_sessions + max_anonymous

    def sealer(self) -> Any:
        if self._sealer is None:
            self._sealer = self._sealer_of()
        return self._sealer

    # -- reading ------------------------------------------------------------------------

    async def get(self, sid: Any) -> WebSession | None:
        """The live session ``sid`` names, or None (unknown, signed out, expired: an
        expired row is deleted). At most one read by primary key."""
        if not isinstance(sid, str) or not sid or len(sid) > 128:
            return None
        key = hash_id(sid)
        now = time.monotonic()
        await self._maybe_sweep(now)
        cached = self._live.get(key)
        if cached is not None and now - cached.checked < self.recheck:
            if cached.expires >= time.time():
                self._live.move_to_end(key)
                return cached
        async with self.engine.connect() as conn:
            row = (await conn.execute(sa.select(table).where(table.c.id_hash == key))).first()
        if row is None:
            self._live.pop(key, None)
            return None
        if row.expires < time.time():
            await self._delete([key])
            return None
        token = self._open_token(row) if row.token_sealed is not None else None
        if row.signed_in and token is None:
            return None  # sealed with a key this process lacks: not signed in here
        session = self._live.get(key)  # another request may have filled it meanwhile
        if session is None:
            session = WebSession(sid=sid, csrf=row.csrf, expires=row.expires)
            session.tokens, session.refilled = self.burst, now
        session.csrf, session.expires = row.csrf, row.expires
        if (session.user_id, session.access_token) != (row.user_id, token):
            session.members = {}  # someone else now: nothing cached for them holds
        session.user_id, session.username, session.access_token = (
            row.user_id,
            row.username,
            token,
        )
        session.checked = now
        self._remember(key, session)
        return session

    def _open_token(self, row: Any) -> str | None:
        try:
            token: str = self.sealer().open(
                Sealed(row.token_key, row.token_nonce, row.token_sealed),
                _associated(row.id_hash, "token"),
            )
        except Exception as exc:  # a key this process lacks, or a row moved or tampered with
            log.warning("web: a stored session's token did not open (%s)", type(exc).__name__)
            return None
        return token

    # -- writing ------------------------------------------------------------------------

    def transient(self) -> WebSession:
        """A visitor's session that is not stored (no id, no CSRF token): pages that only
        show "sign in" need nothing kept; ``new`` stores one once it holds something."""
        now = time.monotonic()
        return WebSession(sid="", csrf="", expires=time.time(), tokens=self.burst, refilled=now)

    async def new(self, pending: PendingSignIn, like: WebSession | None = None) -> WebSession:
        """A stored anonymous session holding a sign-in in flight, evicting anonymous ones
        only; ``like``'s rate bucket carries over."""
        session = self._fresh(like)
        values = self._row(session, signed_in=False) | self._pending_values(
            session.id_hash, pending
        )
        async with self.engine.begin() as conn:
            await self._make_room(conn, signed_in=False, cap=self.max_anonymous)
            await conn.execute(sa.insert(table).values(**values))
        self._remember(session.id_hash, session)
        return session

    async def begin_sign_in(self, session: WebSession, pending: PendingSignIn) -> bool:
        """Keep ``pending`` in a stored session (replacing one in flight); False when the
        row is gone (signed out meanwhile)."""
        key = session.id_hash
        async with self.engine.begin() as conn:
            done = await conn.execute(
                sa.update(table)
                .where(table.c.id_hash == key)
                .values(**self._pending_values(key, pending))
            )
        return bool(done.rowcount)

    async def take_pending(self, session: WebSession) -> PendingSignIn | None:
        """The session's sign-in in flight, taken from the store at most once, or None."""
        if not session.sid:
            return None
        key = session.id_hash
        async with self.engine.begin() as conn:
            row = (
                await conn.execute(
                    sa.select(
                        table.c.pending_key,
                        table.c.pending_nonce,
                        table.c.pending_sealed,
                        table.c.pending_expires,
                    ).where(table.c.id_hash == key)
                )
            ).first()
            if row is None or row.pending_nonce is None:
                return None
            taken = await conn.execute(
                sa.update(table)
                .where(table.c.id_hash == key, table.c.pending_nonce == row.pending_nonce)
                .values(
                    pending_key=None,
                    pending_nonce=None,
                    pending_sealed=None,
                    pending_expires=None,
                )
            )
        if taken.rowcount != 1:
            return None  # another request took it first
        try:
            data = json.loads(
                self.sealer().open(
                    Sealed(row.pending_key, row.pending_nonce, row.pending_sealed),
                    _associated(key, "pending"),
                )
            )
        except Exception as exc:
            log.warning("web: a pending sign-in did not open (%s)", type(exc).__name__)
            return None
        return PendingSignIn(data["state"], data["verifier"], float(row.pending_expires))

    async def rotate(
        self, old: WebSession, *, user_id: str, username: str, access_token: str
    ) -> WebSession:
        """A new id and CSRF token for a session that just signed in; the old row is deleted
        in the same transaction (its id is dead everywhere)."""
        fresh = self._fresh(old)
        fresh.user_id, fresh.username, fresh.access_token = user_id, username[:200], access_token
        key = fresh.id_hash
        sealed = self.sealer().seal(access_token, _associated(key, "token"), fingerprint=False)
        values = self._row(fresh, signed_in=True) | {
            "user_id": user_id,
            "username": fresh.username,
            "token_key": sealed.key_id,
            "token_nonce": sealed.nonce,
            "token_sealed": sealed.ciphertext,
        }
        async with self.engine.begin() as conn:
            if old.sid:
                await conn.execute(sa.delete(table).where(table.c.id_hash == old.id_hash))
            await self._make_room(conn, signed_in=True, cap=self.max_sessions)
            await conn.execute(sa.insert(table).values(**values))
        if old.sid:
            self._live.pop(old.id_hash, None)
        self._remember(key, fresh)
        return fresh

    async def drop(self, session: WebSession) -> None:
        """Sign out: the row is deleted; other processes stop trusting it within
        ``recheck_seconds``."""
        if session.sid:
            await self._delete([session.id_hash])

    async def sweep(self) -> int:
        """Delete expired rows now; how many."""
        self._swept = time.monotonic()
        now = time.time()
        for key in [k for k, s in self._live.items() if s.expires < now]:
            del self._live[key]
        return await sweep_expired(self.engine)

    # -- helpers ------------------------------------------------------------------------

    def _fresh(self, like: WebSession | None) -> WebSession:
        now = time.monotonic()
        session = WebSession(
            sid=secrets.token_urlsafe(32),
            csrf=secrets.token_urlsafe(32),
            expires=time.time() + self.lifetime,
            tokens=self.burst,
            refilled=now,
            checked=now,
        )
        if like is not None:
            session.tokens, session.refilled = like.tokens, like.refilled
        return session

    @staticmethod
    def _row(session: WebSession, *, signed_in: bool) -> dict[str, Any]:
        return {
            "id_hash": session.id_hash,
            "signed_in": signed_in,
            "expires": session.expires,
            "csrf": session.csrf,
        }

    def _pending_values(self, key: str, pending: PendingSignIn) -> dict[str, Any]:
        secret = json.dumps({"state": pending.state, "verifier": pending.verifier})
        sealed = self.sealer().seal(secret, _associated(key, "pending"), fingerprint=False)
        return {
            "pending_key": sealed.key_id,
            "pending_nonce": sealed.nonce,
            "pending_sealed": sealed.ciphertext,
            "pending_expires": pending.expires,
        }

    def _remember(self, key: str, session: WebSession) -> None:
        self._live[key] = session
        self._live.move_to_end(key)
        while len(self._live) > self._live_cap:
            self._live.popitem(last=False)

    async def _delete(self, keys: list[str]) -> None:
        for key in keys:
            self._live.pop(key, None)
        async with self.engine.begin() as conn:
            await conn.execute(sa.delete(table).where(table.c.id_hash.in_(keys)))

    async def _make_room(self, conn: Any, *, signed_in: bool, cap: int) -> None:
        """Rows of this kind out, soonest to expire (expired ones) first, until one more
        fits. Two processes creating sessions at once may overshoot the cap by a few."""
        kind = table.c.signed_in == signed_in
        count = (await conn.execute(sa.select(sa.func.count()).where(kind))).scalar_one()
        if count < cap:
            return
        doomed = list(
            (
                await conn.execute(
                    sa.select(table.c.id_hash)
                    .where(kind)
                    .order_by(table.c.expires)
                    .limit(count - cap + 1)
                )
            ).scalars()
        )
        await conn.execute(sa.delete(table).where(table.c.id_hash.in_(doomed)))
        for key in doomed:
            self._live.pop(key, None)

    async def _maybe_sweep(self, now: float) -> None:
        if now - self._swept < self.sweep_every:
            return
        self._swept = now
        try:
            await self.sweep()
        except Exception as exc:  # a sweep that fails waits for the next turn
            log.warning("web: sweeping expired sessions failed (%s)", type(exc).__name__)


async def sweep_expired(engine: Any) -> int:
    """Delete every expired session row (both kinds, each by its index); how many."""
    now = time.time()
    deleted = 0
    async with engine.begin() as conn:
        for signed_in in (False, True):
            result = await conn.execute(
                sa.delete(table).where(table.c.signed_in == signed_in, table.c.expires < now)
            )
            deleted += int(result.rowcount or 0)
    return deleted


def take_token(session: WebSession, per_minute: float, burst: float) -> bool:
    """A token bucket per session: ``burst`` at once, then ``per_minute`` on average."""
    now = time.monotonic()
    session.tokens = min(burst, session.tokens + (now - session.refilled) * per_minute / 60.0)
    session.refilled = now
    if session.tokens < 1.0:
        return False
    session.tokens -= 1.0
    return True
