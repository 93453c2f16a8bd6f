"""The stored form of a message's text: redacted, normalised, hashed and sealed.

Apart from the writer, which orders and commits operations: this is the CPU-only half
(no database) that the writer runs between its commits and ahead of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gigi_memory.ingest.operations import NO_CONTENT, Content, Op
from gigi_memory.ingest.text import search_text

if TYPE_CHECKING:
    from gigi_memory.ingest.redactor import Redactor
    from gigi_memory.service import MemoryService


class ContentMaker:
    """The writer's content steps; the writer supplies ``service`` and ``redactor``."""

    service: MemoryService
    redactor: Redactor

    async def _prepare(self, run: list[Op]) -> list[tuple[Op, Content]]:
        """Redact, normalise and seal (CPU only, ~7 µs a message: sliced by the caller)."""
        svc = self.service
        policies: dict[str, Any] = {}  # one policy lookup per guild, not two per message
        out: list[Any] = []
        todo: list[tuple[int, Op, dict[str, Any], str, Any]] = []
        for op in run:
            d = op.materialize()
            guild = op.guild_id or ""
            if (
                op.kind == "create"
                and svc.cache.secured  # nothing secured (the rule): no call per message
                and svc.cache.is_secured(guild, (d["channel_id"], d.get("parent_id")))
            ):
                continue  # secured after it was queued: it is dropped with the channel's window
            policy = policies.get(guild)
            if policy is None:
                policy = policies[guild] = svc.cache.guild(guild)
            storage = d.get("storage") or policy.storage
            if op.kind == "edit" and not svc.still_on(op.guild_id, d):
                storage = "metadata_only"  # the channel is off now: drop the old text, keep none
            rules = policy.redaction
            ahead, op.ahead = op.ahead, None
            if (
                ahead is not None
                and (ahead[0] is rules or ahead[0] == rules)
                and ahead[1] == storage
            ):
                out.append((op, ahead[2]))  # made while the batch before it committed
                continue
            todo.append((len(out), op, d, storage, rules))
            out.append(None)
        if todo:
            rows = await self._contents([(op, d, s, rules) for _, op, d, s, rules in todo])
            for (at, op, *_), row in zip(todo, rows, strict=True):
                out[at] = (op, row)
        return out

    async def _prepare_ahead(self, ops: list[Op]) -> None:
        """The content of creates still queued, made while the batch before them commits;
        kept with the rules and storage it was made with, and made again if those changed."""
        svc = self.service
        policies: dict[str, Any] = {}
        items = []
        for op in ops:
            d = op.materialize()
            guild = op.guild_id or ""
            policy = policies.get(guild)
            if policy is None:
                policy = policies[guild] = svc.cache.guild(guild)
            items.append((op, d, d.get("storage") or policy.storage, policy.redaction))
        for (op, _, storage, rules), row in zip(items, await self._contents(items), strict=True):
            op.ahead = (rules, storage, row)

    async def _contents(self, items: list[tuple[Op, dict[str, Any], str, Any]]) -> list[Content]:
        """The stored form of each message's text: redacted, normalised, hashed, sealed (the
        sealing in one call for all of them: one key check and one nonce range), as the
        tuple ``ledger.CONTENT`` names, which goes into the ``COPY`` row as it is."""
        svc = self.service
        rows: list[Content] = []
        seal: list[tuple[str, str, str]] = []
        sealed_at: list[int] = []
        texts = await self.redactor.redact_each(items)
        for (op, d, storage, _), text in zip(items, texts, strict=True):
            if storage == "metadata_only" or text is None:  # None: redaction could not finish
                rows.append(NO_CONTENT)
                continue
            guild = op.guild_id or ""
            if storage == "encrypted" and text:
                seal.append((text, guild, d["message_id"]))
                sealed_at.append(len(rows))
            rows.append((search_text(text), svc.text_hash(guild, text), None, None, None))
        if seal and (sealed := svc.seal_many(seal)) is not None:
            for at, (key_id, nonce, ct) in zip(sealed_at, sealed, strict=True):
                words, digest = rows[at][:2]
                rows[at] = (words, digest, key_id, nonce, ct)
        return rows
