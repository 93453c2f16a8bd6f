"""What a model call needs to know, kept for a few seconds: policy, profiles, credentials, keys.

Without it every call opened six ORM sessions (policy, profile, credential, unseal, usage,
outcome). Facts (a guild's policy, an owner's profile for a purpose, a credential's
metadata) live ``GIGI_LLM_CACHE_SECONDS`` (default 2); a change made through this
process's ``kernel.llm`` clears them at once, one made by another process applies within
that time. A generation counter, bumped by every clear, keeps a read that began before a
change from storing what it read. In the last quarter of a fact's life it is renewed once:
by a background read when a loader for its kind is registered (``loaders``: the service
registers the policy, profile and credential reads), else by the one caller who is told
it is missing while every other caller still gets the cached value. Under load a fact
is then renewed by one read, not by every turn arriving in the moment it expires (ten
reads at ten concurrent turns, 20-60 ms each under load: a p99 spike), and with a loader
no turn waits for that read. Nothing older than the TTL is ever returned.

Unsealed keys live ``GIGI_LLM_SECRET_SECONDS`` (default 60) in this process's memory only
(a timer drops each at its expiry, whether or not anyone asks for it again), keyed by
credential id *and* fingerprint: a key rotated elsewhere has a new fingerprint, so
the old plaintext is never matched once the credential's metadata was read again. Revoking
or rotating through this kernel drops the key and bumps the credential's epoch, which a
call checks right before it hands the key to the provider.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from gigi_core.errors import ConfigError
from gigi_core.policy.shared_reads import SharedReads

log = logging.getLogger(__name__)
CACHE_ENV = "GIGI_LLM_CACHE_SECONDS"
Loader = Callable[[tuple[Any, ...]], Awaitable[Any]]
SECRET_ENV = "GIGI_LLM_SECRET_SECONDS"
_MISSING = object()


def seconds_from_env(name: str, default: float) -> float:
    """A number of seconds, 0 or more (0 turns the cache off); the error names the variable."""
    raw = os.environ.get(name) or ""
    if not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ConfigError(
            f"{name}: {raw!r} is not a number of seconds (0 or more)",
            hint=f"unset {name} or fix it",
        )
    return value


@dataclass
class _Secret:
    expires: float
    fingerprint: str
    plaintext: str = field(repr=False)


class LlmCache:
    """Facts by key and unsealed keys by credential, each with its own lifetime."""

    max_entries = 10_000

    def __init__(self, ttl: float | None = None, secret_ttl: float | None = None) -> None:
        self.ttl = seconds_from_env(CACHE_ENV, 2.0) if ttl is None else ttl
        self.secret_ttl = seconds_from_env(SECRET_ENV, 60.0) if secret_ttl is None else secret_ttl
        self.generation = 0  # bumped by every clear: a read begun before it is not kept
        self._facts: dict[tuple[Any, ...], tuple[float, Any]] = {}
        self._renewing: dict[tuple[Any, ...], float] = {}  # key -> until when one caller reads it
        #: Reads by a key's kind (its first item), for renewals in the background.
        self.loaders: dict[str, Loader] = {}
        self._background: set[asyncio.Task[None]] = set()
        #: Misses of one key at the same moment share one read (``fetch``; the caller's
        #: key unsealing too).
        self.reads = SharedReads()
        self._secrets: dict[str, _Secret] = {}
        self._epochs: dict[str, int] = {}  # credential id -> revocations/rotations here
        self._every = 0  # bumped by ``retire_all``: counts in every key's epoch

    # -- facts -------------------------------------------------------------------------

    def get(self, key: tuple[Any, ...]) -> Any:
        """The cached value (which may be None), or ``MISSING``: the caller reads and ``put``s.

        Near its expiry a fact is ``MISSING`` to one caller (it renews it), not to all.
        """
        entry = self._facts.get(key)
        now = time.monotonic()
        if entry is None or entry[0] < now:
            return _MISSING
        if entry[0] - now < self.ttl / 4 and self._renewing.get(key, 0.0) < now:
            if len(self._renewing) >= self.max_entries:
                self._renewing.clear()
            self._renewing[key] = now + self.ttl / 4  # another may try if this one fails
            if not self._renew(key):
                return _MISSING
        return entry[1]

    async def fetch(self, key: tuple[Any, ...], read: Callable[[], Awaitable[Any]]) -> Any:
        """The cached value, else ``await read()`` (kept): one read for every caller that
        misses ``key`` together, within one generation."""
        found = self.get(key)
        if found is not _MISSING:
            return found
        generation = self.generation

        async def read_and_keep() -> Any:
            value = await read()
            self.put(key, value, generation)
            return value

        if self.ttl <= 0:  # the cache is off: nothing read by another caller is used
            return await read()
        return await self.reads.read((key, generation), read_and_keep)

    def _renew(self, key: tuple[Any, ...]) -> bool:
        """Read ``key`` again in the background, if a loader knows how (and a loop runs)."""
        loader = self.loaders.get(key[0])
        if loader is None:
            return False
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        # The generation as of now, not as of the read's first step.
        task = loop.create_task(self._reload(key, loader, self.generation))
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return True

    async def _reload(self, key: tuple[Any, ...], loader: Loader, generation: int) -> None:
        try:
            value = await loader(key)
        except Exception as exc:  # the fact expires as usual and is read by a caller then
            self._renewing.pop(key, None)
            log.warning("renewing a cached LLM fact failed: %s", type(exc).__name__)
            return
        self.put(key, value, generation)

    def put(
        self, key: tuple[Any, ...], value: Any, generation: int, *, expires: float | None = None
    ) -> None:
        """Keep ``value`` for the TTL, or until ``expires`` if sooner (a fact derived from
        others must not outlive the oldest of them)."""
        self._renewing.pop(key, None)
        if self.ttl <= 0 or generation != self.generation:
            return
        now = time.monotonic()
        if len(self._facts) >= self.max_entries:  # the expired go first, everything if none
            live = {k: e for k, e in self._facts.items() if e[0] >= now}
            self._facts = live if len(live) < self.max_entries * 3 // 4 else {}
        until = now + self.ttl
        self._facts[key] = (until if expires is None else min(until, expires), value)

    def expires(self, key: tuple[Any, ...]) -> float:
        """When a cached fact expires (now if it is not cached)."""
        entry = self._facts.get(key)
        return entry[0] if entry is not None else time.monotonic()

    def replace(self, key: tuple[Any, ...], value: Any) -> None:
        """Update a cached fact in place (what this process just wrote), keeping its expiry."""
        entry = self._facts.get(key)
        if entry is not None:
            self._facts[key] = (entry[0], value)

    def clear(self) -> None:
        """Something changed through this kernel: every fact is read again."""
        self.generation += 1
        self._facts.clear()
        self._renewing.clear()

    # -- keys --------------------------------------------------------------------------

    def secret(self, credential_id: str, fingerprint: str) -> str | None:
        entry = self._secrets.get(credential_id)
        if entry is None or entry.fingerprint != fingerprint:
            return None
        if entry.expires < time.monotonic():
            del self._secrets[credential_id]
            return None
        return entry.plaintext

    def keep_secret(self, credential_id: str, fingerprint: str, plaintext: str, epoch: int) -> None:
        """Keep an unsealed key, unless the credential was revoked or rotated meanwhile."""
        if self.secret_ttl <= 0 or epoch != self.epoch(credential_id):
            return
        if len(self._secrets) >= self.max_entries:
            self._secrets.clear()
        expires = time.monotonic() + self.secret_ttl
        self._secrets[credential_id] = _Secret(expires, fingerprint, plaintext)
        try:  # the handle holds the id and the time, never the plaintext
            asyncio.get_running_loop().call_later(
                self.secret_ttl, self._expire_secret, credential_id, expires
            )
        except RuntimeError:  # no loop: the key expires at its next lookup
            pass

    def _expire_secret(self, credential_id: str, expires: float) -> None:
        entry = self._secrets.get(credential_id)
        if entry is not None and entry.expires <= expires:
            del self._secrets[credential_id]

    def drop_secret(self, credential_id: str) -> None:
        """The credential was seen revoked (perhaps by another process): forget its key."""
        self._secrets.pop(credential_id, None)

    def epoch(self, credential_id: str) -> int:
        return self._epochs.get(credential_id, 0) + self._every

    def retire(self, credential_id: str) -> None:
        """The credential was revoked or rotated here: drop its key and every fact."""
        self._epochs[credential_id] = self.epoch(credential_id) + 1
        self._secrets.pop(credential_id, None)
        self.clear()

    def retire_all(self) -> None:
        """Every kept secret is dropped, and a read begun before this keeps nothing."""
        self._every += 1
        self._secrets.clear()
        self.clear()


MISSING = _MISSING
