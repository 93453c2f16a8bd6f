"""One ``MemoryService`` per kernel: the policy cache, the writer and the bulk statements.

Created by the ``startup`` hook (or on first use) and kept on the kernel as
``kernel.gigi_memory``, as hooks.md's ``startup`` example keeps plugin state; ``shutdown``
commits what is queued and stops its tasks.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from typing import TYPE_CHECKING, Any

from gigi_core import Sealed
from gigi_memory.embedding.vectors import VectorService
from gigi_memory.ingest.authors import Authors
from gigi_memory.ingest.writer import Writer
from gigi_memory.policy import PolicyCache, refresh_seconds
from gigi_memory.store import Store

if TYPE_CHECKING:
    from gigi_core import Kernel

log = logging.getLogger("gigi_memory")
ATTRIBUTE = "gigi_memory"


class MemoryService:
    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        # kernel.db is the kernel's store handle (an SQLAlchemy AsyncEngine and the dialect).
        self.engine = kernel.db.engine
        self.dialect: str = kernel.db.dialect
        self.cache = PolicyCache()
        from gigi_memory.ingest.observe import GateMemo  # observe imports this module

        self.gate_memo = GateMemo()
        self.store = Store(self.engine, self.dialect)
        self.writer = Writer(self)
        self.vectors = VectorService(self)
        self.authors = Authors(self.engine, self.dialect)
        self.vector_cache: Any = (
            None  # gigi_memory.search.vecsearch.VectorCache, made on first search
        )
        self._refresher: asyncio.Task[None] | None = None
        self._hash_key: bytes | None = None
        self._hashers: dict[str, Any] = {}  # per guild: the keyed hash of its prefix
        self._sealer: Any = None
        self._seal_warned = False

    async def start(self) -> None:
        await self.store.prepare()
        try:
            if not await self.cache.load(self.engine):
                await self.cache.load(self.engine)
        except Exception as exc:  # nothing is ingested until a reload succeeds
            log.error("memory: could not load the memory policy: %s", type(exc).__name__)
        if self._refresher is None:
            self._refresher = asyncio.get_running_loop().create_task(
                self._refresh(), name="gigi-memory-policy"
            )

    async def _refresh(self) -> None:
        interval = refresh_seconds()
        while True:
            await asyncio.sleep(interval)
            try:
                await self.cache.load(self.engine)
            except Exception as exc:
                log.warning("memory: policy reload failed: %s", type(exc).__name__)

    async def close(self) -> None:
        if self._refresher is not None:
            self._refresher.cancel()
            with contextlib.suppress(BaseException):
                await self._refresher
        await self.writer.close()
        with contextlib.suppress(Exception):
            await self.authors.flush()
        # No removed word may survive a stop inside SQLite's FTS5 segments; PostgreSQL's
        # GIN pending list is merged for the next start's searches (nothing when clean).
        with contextlib.suppress(Exception):
            await self.store.compact()
        await self.vectors.close()

    # -- what the writer needs ----------------------------------------------------------------

    def still_on(self, guild_id: str | None, data: dict[str, Any]) -> bool:
        """Whether an edited message's channel is remembered now (else its text is dropped)."""
        if guild_id is None:
            return False
        gate = self.cache.gate(
            guild_id=guild_id,
            channel_id=data["channel_id"],
            parent_id=data.get("parent_id"),
            kind="text",
            is_bot=False,
            created_ms=data.get("edited_ms") or 0,
            live=False,
        )
        return gate.ingest or gate.reason in ("past retention", "before the channel was enabled")

    def sealer(self) -> Any:
        """The kernel's sealer for data at rest: the operator's key, else the key file."""
        if self._sealer is None:
            self._sealer = self.kernel.state_sealer
        return self._sealer

    def seal(self, text: str, guild_id: str, message_id: str) -> tuple[str, bytes, bytes] | None:
        sealed = self.seal_many([(text, guild_id, message_id)])
        return sealed[0] if sealed else None

    def seal_many(self, items: list[tuple[str, str, str]]) -> list[tuple[str, bytes, bytes]] | None:
        """``seal`` for ``(text, guild_id, message_id)`` triples: one nonce range per batch."""
        try:
            sealed = self.sealer().seal_many(
                [(text, _associated(g, m)) for text, g, m in items], fingerprint=False
            )
        except Exception as exc:
            if not self._seal_warned:
                self._seal_warned = True
                log.error(
                    "memory: cannot seal message text (%s); storing search words only",
                    type(exc).__name__,
                )
            return None
        return [(s.key_id, s.nonce, s.ciphertext) for s in sealed]

    def unseal(self, row: Any) -> str | None:
        if row.sealed_text is None or row.sealed_key_id is None:
            return None
        try:
            return self.sealer().open(
                Sealed(row.sealed_key_id, row.sealed_nonce, row.sealed_text),
                _associated(row.guild_id, row.message_id),
            )
        except Exception as exc:
            log.warning("memory: a sealed message did not open: %s", type(exc).__name__)
            return None

    def text_hash(self, guild_id: str, text: str) -> str | None:
        """A keyed hash of the stored text (equal texts compare equal; not guessable)."""
        if self._hash_key is None:
            try:
                self._hash_key = hashlib.sha256(
                    b"gigi-memory-hash:" + self.sealer().keyed_hash(b"memory").encode()
                ).digest()
            except Exception:
                return None
        # Keyed BLAKE2b over "guild\0text": a MAC by its design (RFC 7693), one pass, a
        # quarter of HMAC-SHA256's cost; 32 bytes, so the 64 hex characters the column holds.
        # The state after the key and the guild's prefix is kept and copied: half the cost.
        base = self._hashers.get(guild_id)
        if base is None:
            base = hashlib.blake2b(key=self._hash_key, digest_size=32)
            base.update(f"{guild_id}\0".encode())
            if len(self._hashers) < 10_000:
                self._hashers[guild_id] = base
        h = base.copy()
        h.update(text.encode())
        return h.hexdigest()


def _associated(guild_id: str, message_id: str) -> str:
    return f"gigi-memory:{guild_id}:{message_id}"


def service_of(kernel: Any) -> MemoryService:
    """The kernel's memory service, created on first use (the startup hook starts it)."""
    svc = kernel.__dict__.get(ATTRIBUTE)
    if svc is None:
        svc = MemoryService(kernel)
        setattr(kernel, ATTRIBUTE, svc)
    return svc  # type: ignore[no-any-return]
